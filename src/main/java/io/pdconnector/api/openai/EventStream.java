package io.pdconnector.api.openai;

import com.fasterxml.jackson.databind.ObjectMapper;
import jakarta.ws.rs.core.StreamingOutput;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Server-sent events as OpenAI streams them: one {@code data: <json>} event per chunk, each flushed as
 * it is written, and {@code data: [DONE]} last. The whole answer is decided before the first byte (the
 * pull is verified first), so a declined pull is still a plain problem reply, never a broken stream.
 */
final class EventStream {

    static final String MEDIA_TYPE = "text/event-stream";
    private static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8);

    private EventStream() {
    }

    static StreamingOutput of(ObjectMapper json, List<?> chunks) {
        return (OutputStream out) -> {
            for (Object chunk : chunks) {
                out.write("data: ".getBytes(StandardCharsets.UTF_8));
                out.write(json.writeValueAsBytes(chunk));
                out.write("\n\n".getBytes(StandardCharsets.UTF_8));
                out.flush();
            }
            out.write(DONE);
            out.flush();
        };
    }
}
