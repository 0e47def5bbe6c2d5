package io.pdconnector.api.openai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.restassured.path.json.JsonPath;
import java.util.ArrayList;
import java.util.List;

/** Parses an OpenAI-style SSE body strictly: only {@code data: } events, blank-line separated, [DONE] last. */
final class SseEvents {

    private SseEvents() {
    }

    static List<JsonPath> parse(String body) {
        assertTrue(body.endsWith("\n\n"), "the stream ends with a complete event");
        String[] events = body.substring(0, body.length() - 2).split("\n\n", -1);
        assertEquals("data: [DONE]", events[events.length - 1], "the stream ends with [DONE]");
        List<JsonPath> chunks = new ArrayList<>();
        for (int i = 0; i < events.length - 1; i++) {
            assertTrue(events[i].startsWith("data: {") && !events[i].contains("\n"),
                    "event " + i + " is one data line of JSON: " + events[i]);
            chunks.add(new JsonPath(events[i].substring("data: ".length())));
        }
        return chunks;
    }
}
