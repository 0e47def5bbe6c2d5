package io.pdconnector.router;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A scripted P or D on 127.0.0.1 for router tests: answers each request with the next scripted reply
 * (or the default), and records what it was sent.
 */
final class FakeInstance implements AutoCloseable {

    /**
     * One reply: status, content type, body pieces written with a pause between them; with {@code restHeld}, the
     * pieces after the first wait until the test counts it down (at most 10 s; then they are never written).
     */
    record Reply(int status, String contentType, List<String> pieces, long pauseMillis, CountDownLatch restHeld) {
        Reply(int status, String contentType, List<String> pieces, long pauseMillis) {
            this(status, contentType, pieces, pauseMillis, null);
        }

        static Reply json(int status, String body) {
            return new Reply(status, status < 300 ? "application/json" : "application/problem+json", List.of(body), 0);
        }
    }

    /** What one request was. */
    record Seen(String method, String path, String requestId, String body) {
    }

    final String name;
    final HttpServer server;
    final BlockingQueue<Reply> script = new LinkedBlockingQueue<>();
    final List<Seen> seen = new CopyOnWriteArrayList<>();
    volatile Reply fallback;

    FakeInstance(String name, Reply fallback) throws IOException {
        this.name = name;
        this.fallback = fallback;
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(Executors.newCachedThreadPool());
        server.createContext("/", this::handle);
        server.start();
    }

    int port() {
        return server.getAddress().getPort();
    }

    private void handle(HttpExchange x) throws IOException {
        String body = new String(x.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
        seen.add(new Seen(x.getRequestMethod(), x.getRequestURI().getRawPath(),
                x.getRequestHeaders().getFirst("X-Request-Id"), body));
        if (x.getRequestMethod().equals("DELETE")) {
            x.sendResponseHeaders(204, -1);
            x.close();
            return;
        }
        Reply r = script.poll();
        r = r == null ? fallback : r;
        x.getResponseHeaders().add("Content-Type", r.contentType());
        x.sendResponseHeaders(r.status(), 0);
        try (OutputStream out = x.getResponseBody()) {
            for (int i = 0; i < r.pieces().size(); i++) {
                out.write(r.pieces().get(i).getBytes(StandardCharsets.UTF_8));
                out.flush();
                if (i == 0 && r.restHeld() != null && !r.restHeld().await(10, TimeUnit.SECONDS)) {
                    return;
                }
                Thread.sleep(r.pauseMillis());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException clientWentAway) {
            // the router cancelled the exchange
        }
    }

    List<Seen> deletes() {
        return seen.stream().filter(s -> s.method().equals("DELETE")).toList();
    }

    List<Seen> posts() {
        return seen.stream().filter(s -> s.method().equals("POST")).toList();
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
