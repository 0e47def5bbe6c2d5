package io.pdconnector.bench.load;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.Executors;

/**
 * The load tool's HTTP: HTTP/1.1 (connections kept alive and reused, as a router does), a connect
 * timeout and a deadline on every call, JSON in and out. Only addresses {@link LoadOptions#loopback}
 * accepted are ever called.
 */
public final class Http implements AutoCloseable {

    static final ObjectMapper JSON = new ObjectMapper();

    private final HttpClient client;
    private final Duration timeout;

    public Http(Duration timeout) {
        this.timeout = timeout;
        this.client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(5))
                .executor(Executors.newCachedThreadPool(Thread.ofPlatform().daemon().name("http-", 0).factory()))
                .build();
    }

    /** An answer: status and body. */
    public record Reply(int status, byte[] body, String header) {

        public JsonNode json() {
            try {
                return body.length == 0 ? JSON.nullNode() : JSON.readTree(body);
            } catch (IOException e) {
                return JSON.nullNode();
            }
        }

        public String text() {
            return new String(body, StandardCharsets.UTF_8);
        }

        /** The problem reason of an error answer, or "" when there is none. */
        public String reason() {
            return json().path("reason").asText("");
        }
    }

    public Reply get(URI base, String path) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(base.resolve(path)).timeout(timeout).GET().build(), null);
    }

    /** GET, also returning the named response header. */
    public Reply get(URI base, String path, String header) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(base.resolve(path)).timeout(timeout).GET().build(), header);
    }

    public Reply delete(URI base, String path) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(base.resolve(path)).timeout(timeout).DELETE().build(), null);
    }

    public Reply post(URI base, String path, Object body, String... headers) throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path)).timeout(timeout)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body)));
        for (int i = 0; i + 1 < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return send(b.build(), null);
    }

    private Reply send(HttpRequest request, String header) throws IOException, InterruptedException {
        HttpResponse<byte[]> r = client.send(request, HttpResponse.BodyHandlers.ofByteArray());
        return new Reply(r.statusCode(), r.body(), header == null ? null : r.headers().firstValue(header).orElse(null));
    }

    /** The outcome kind of a call that got no answer: {@code error:timeout} or {@code error:<exception>}. */
    public static String errorKind(Exception e) {
        if (e instanceof HttpTimeoutException) {
            return "error:timeout";
        }
        return "error:" + e.getClass().getSimpleName();
    }

    @Override
    public void close() {
        client.close();
    }
}
