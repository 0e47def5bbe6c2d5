package io.pdconnector.api.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** A test's connection to the engine socket: one request at a time, each reply awaited with a deadline. */
final class EngineSocketClient implements AutoCloseable {

    /** One reply: the status and the body (a missing node for 204). */
    record Reply(int status, JsonNode body) {
        String reason() {
            return body.path("reason").asText();
        }
    }

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration DEADLINE = Duration.ofSeconds(20);
    private final SocketChannel channel;

    EngineSocketClient(Path socket) throws IOException {
        channel = SocketChannel.open(StandardProtocolFamily.UNIX);
        channel.connect(UnixDomainSocketAddress.of(socket));
    }

    Reply call(Map<String, ?> request) throws IOException {
        sendRaw(JSON.writeValueAsBytes(request));
        return receive();
    }

    /** Writes {@code body} as one frame, whatever it holds. */
    void sendRaw(byte[] body) throws IOException {
        sendFrame(body.length, body);
    }

    /** A frame header declaring {@code length} bytes, followed by {@code body}. */
    void sendFrame(int length, byte[] body) throws IOException {
        ByteBuffer frame = ByteBuffer.allocate(4 + body.length).putInt(length).put(body).flip();
        while (frame.hasRemaining()) {
            channel.write(frame);
        }
    }

    Reply receive() throws IOException {
        JsonNode reply = receiveFrame();
        return new Reply(reply.get("status").asInt(), reply.path("body"));
    }

    /** The next reply frame whole (op pulls' carry an index beside the status and body). */
    JsonNode receiveFrame() throws IOException {
        ByteBuffer header = ByteBuffer.allocate(4);
        if (!fill(header)) {
            throw new IOException("the server closed the connection");
        }
        ByteBuffer body = ByteBuffer.allocate(header.flip().getInt());
        if (!fill(body)) {
            throw new IOException("the server closed the connection inside a frame");
        }
        return JSON.readTree(body.array());
    }

    /** Whether the server ended the connection (end of stream within the deadline, nothing sent). */
    boolean closedByServer() throws IOException {
        ByteBuffer one = ByteBuffer.allocate(1);
        return read(one) < 0;
    }

    private boolean fill(ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            if (read(buffer) < 0) {
                return false;
            }
        }
        return true;
    }

    /** One read, bounded by the deadline: a server that never answers fails the test instead of hanging it. */
    private int read(ByteBuffer buffer) throws IOException {
        var executor = Executors.newVirtualThreadPerTaskExecutor();
        try {
            return executor.submit(() -> channel.read(buffer)).get(DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            channel.close();
            throw new IOException("no answer on the engine socket within " + DEADLINE);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        } finally {
            executor.shutdownNow();
        }
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }
}
