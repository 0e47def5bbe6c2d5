package io.pdconnector.it;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.pdconnector.testing.FreePort;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Matcher;

/**
 * One packaged pd-connector service ({@code target/quarkus-app/quarkus-run.jar}) as its own OS
 * process, started as an operator would: {@code -D} settings, a free port, stdout and stderr to a
 * log file under {@code target/it-logs/} for diagnosis. {@link #close} kills it (and waits).
 *
 * <p>Its HTTP helpers speak to the service the way a router or an operator does, each call with a
 * deadline, and with the bearer token set by {@link #authorization} (none by default).
 */
public final class ServiceProcess implements AutoCloseable {

    private static final Path APP = Path.of(System.getProperty("pd.it.app", "target/quarkus-app"));
    /** The build directory of the packaged service the ITs start: its KV files, state and logs go under it. */
    public static final Path TARGET = APP.getParent();
    /** How long a packaged service may take to report ready (JIT-cold JVM, NIXL and UCX start, 2 busy cores). */
    public static final Duration READY = Duration.ofSeconds(120);
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(30);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    public final String name;
    public final int port;
    public final Path log;
    /** Where this JVM reaches the service: loopback, or an address of a network namespace the test made. */
    public final String host;
    private final Process process;
    private volatile String authorization;

    private ServiceProcess(String name, String host, int port, Path log, Process process) {
        this.name = name;
        this.host = host;
        this.port = port;
        this.log = log;
        this.process = process;
    }

    /**
     * Where and how a service runs: inside a network namespace ({@code ip netns exec}), reached at
     * {@code host}, with extra environment variables (UCX_TLS ...).
     */
    public record Launch(String netns, String host, Map<String, String> env) {

        public static final Launch LOOPBACK = new Launch(null, "127.0.0.1", Map.of());
    }

    /**
     * Starts the jar with {@code settings} as {@code -D} options (plus pd.nixl.home from this JVM's
     * system property and a free quarkus.http.port). Does not wait: see {@link #awaitReady}.
     */
    public static ServiceProcess start(String name, Map<String, String> settings, Path logDir) throws IOException {
        return start(name, settings, logDir, freePort());
    }

    /** As above on {@code port}: a restarted instance comes back where its peers were told it is. */
    public static ServiceProcess start(String name, Map<String, String> settings, Path logDir, int port)
            throws IOException {
        return start(name, settings, logDir, port, Launch.LOOPBACK);
    }

    /** As above, launched as {@code launch} says; the port is free in this JVM's namespace, and so in a fresh one. */
    public static ServiceProcess start(String name, Map<String, String> settings, Path logDir, Launch launch)
            throws IOException {
        return start(name, settings, logDir, freePort(), launch);
    }

    private static ServiceProcess start(String name, Map<String, String> settings, Path logDir, int port,
            Launch launch) throws IOException {
        Path jar = APP.resolve("quarkus-run.jar");
        assertTrue(Files.isRegularFile(jar), "packaged jar at " + jar + " (run through mvn verify)");
        Map<String, String> all = new LinkedHashMap<>();
        all.put("pd.nixl.home", System.getProperty("pd.nixl.home"));
        all.put("quarkus.http.port", Integer.toString(port));
        all.putAll(settings);
        List<String> cmd = new ArrayList<>();
        if (launch.netns() != null) {
            cmd.addAll(List.of("ip", "netns", "exec", launch.netns()));
        }
        cmd.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"));
        all.forEach((k, v) -> cmd.add("-D" + k + "=" + v));
        cmd.addAll(List.of("-jar", jar.toString()));
        Files.createDirectories(logDir);
        Path log = logDir.resolve(name + ".log");
        Files.writeString(log, String.join(" ", cmd) + System.lineSeparator());
        ProcessBuilder builder = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        builder.environment().putAll(launch.env());
        return new ServiceProcess(name, launch.host(), port, log, builder.start());
    }

    /** Polls {@code /q/health/ready} until it answers 200; fails with the log's tail if the process dies or the deadline passes. */
    public void awaitReady(Duration deadline) throws Exception {
        long end = System.nanoTime() + deadline.toNanos();
        String last = "no answer";
        while (System.nanoTime() < end) {
            if (!process.isAlive()) {
                throw new AssertionError(name + " exited with " + process.exitValue() + " before it was ready; log "
                        + log + ":\n" + tail());
            }
            try {
                HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(uri("/q/health/ready"))
                        .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200) {
                    return;
                }
                last = r.statusCode() + " " + r.body();
            } catch (IOException notListeningYet) {
                last = notListeningYet.toString();
            }
            Thread.sleep(200);
        }
        throw new AssertionError(name + " not ready within " + deadline + " (last: " + last + "); log " + log + ":\n"
                + tail());
    }

    /** The token every later call presents ({@code null}: none), as a router, an engine or an operator would. */
    public ServiceProcess authorization(String token) {
        this.authorization = token;
        return this;
    }

    private HttpRequest.Builder request(String path) {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri(path)).timeout(CALL_TIMEOUT);
        String token = authorization;
        return token == null ? b : b.header("Authorization", "Bearer " + token);
    }

    public URI uri(String path) {
        return URI.create("http://" + host + ":" + port + path);
    }

    /** POSTs a JSON body; returns status and parsed body (problem documents included). */
    public Reply post(String path, Object body) throws IOException, InterruptedException {
        HttpRequest request = request(path).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body))).build();
        return reply(HTTP.send(request, HttpResponse.BodyHandlers.ofByteArray()));
    }

    public Reply get(String path) throws IOException, InterruptedException {
        return reply(HTTP.send(request(path).build(), HttpResponse.BodyHandlers.ofByteArray()));
    }

    public Reply delete(String path) throws IOException, InterruptedException {
        return reply(HTTP.send(request(path).DELETE().build(), HttpResponse.BodyHandlers.ofByteArray()));
    }

    private Reply reply(HttpResponse<byte[]> r) {
        return new Reply(r.statusCode(), r.body(), r.headers().firstValue("Content-Type").orElse(""), r.headers());
    }

    /** {@code POST /v1/producer/prefill} of {@code tokens} for a remote decode; P's kv_transfer_params. */
    public JsonNode prefill(String requestId, int[] tokens) throws IOException, InterruptedException {
        Reply r = tryPrefill(requestId, tokens);
        assertTrue(r.status() == 200, name + " prefill " + requestId + ": " + r);
        return r.json().path("kv_transfer_params");
    }

    /** As {@link #prefill}, whatever P answers (a 503 no-free-blocks with its Retry-After included). */
    public Reply tryPrefill(String requestId, int[] tokens) throws IOException, InterruptedException {
        return post("/v1/producer/prefill", Map.of("request_id", requestId, "token_ids", tokens,
                "kv_transfer_params", Map.of("do_remote_decode", true)));
    }

    /** {@code POST /v1/consumer/pull} with P's params forwarded verbatim, as a router does. */
    public Reply pull(String requestId, int[] tokens, JsonNode params) throws IOException, InterruptedException {
        return post("/v1/consumer/pull?matches_reference=true", Map.of("request_id", requestId, "token_ids", tokens,
                "kv_transfer_params", params));
    }

    /** {@code GET /v1/status}. */
    public JsonNode status() throws IOException, InterruptedException {
        Reply r = get("/v1/status");
        assertTrue(r.status() == 200, name + " status: " + r);
        return r.json();
    }

    /** Polls {@code GET /v1/status} until {@code condition} holds; fails with the last status at the deadline. */
    public JsonNode awaitStatus(String what, Predicate<JsonNode> condition, Duration deadline) throws Exception {
        long end = System.nanoTime() + deadline.toNanos();
        JsonNode s = status();
        while (!condition.test(s)) {
            if (System.nanoTime() > end) {
                throw new AssertionError(name + ": " + what + " not reached within " + deadline + "; status " + s);
            }
            Thread.sleep(50);
            s = status();
        }
        return s;
    }

    /**
     * Polls {@code GET /v1/registry} until every engine in {@code engineIds} is listed as a producer;
     * fails with the last view at the deadline.
     */
    public JsonNode awaitProducers(Duration deadline, String... engineIds) throws Exception {
        return awaitRegistry("producers " + String.join(", ", engineIds) + " listed", view -> {
            for (String id : engineIds) {
                boolean listed = false;
                for (JsonNode i : view.path("instances")) {
                    listed |= i.path("engine_id").asText().equals(id) && i.path("producer").asBoolean();
                }
                if (!listed) {
                    return false;
                }
            }
            return true;
        }, deadline);
    }

    /** Polls {@code GET /v1/registry} until {@code condition} holds; fails with the last view at the deadline. */
    public JsonNode awaitRegistry(String what, Predicate<JsonNode> condition, Duration deadline) throws Exception {
        long end = System.nanoTime() + deadline.toNanos();
        while (true) {
            Reply r = get("/v1/registry");
            if (r.status() == 200 && condition.test(r.json())) {
                return r.json();
            }
            if (System.nanoTime() > end) {
                throw new AssertionError(name + ": " + what + " not reached within " + deadline + "; registry " + r);
            }
            Thread.sleep(100);
        }
    }

    /**
     * The sum of the Prometheus samples named {@code metric} at {@code /q/metrics} whose labels include
     * every {@code label="value"} given (pairs: name, value); 0 when there is none.
     */
    public double metric(String metric, String... labels) throws IOException, InterruptedException {
        Reply r = get("/q/metrics");
        assertTrue(r.status() == 200, name + " metrics: " + r.status());
        double sum = 0;
        java.util.regex.Pattern sample = java.util.regex.Pattern.compile(
                "^" + java.util.regex.Pattern.quote(metric) + "(\\{[^}]*})?\\s+(\\S+)$");
        for (String line : r.text().split("\n")) {
            Matcher m = sample.matcher(line.strip());
            if (!m.matches()) {
                continue;
            }
            String tags = m.group(1) == null ? "" : m.group(1);
            boolean all = true;
            for (int i = 0; i + 1 < labels.length; i += 2) {
                all &= tags.contains(labels[i] + "=\"" + labels[i + 1] + "\"");
            }
            if (all) {
                sum += Double.parseDouble(m.group(2));
            }
        }
        return sum;
    }

    @Override
    public String toString() {
        return name + " (port " + port + ")";
    }

    /** Waits for the process to end by itself; its exit code (an AssertionError with the log's tail if it does not). */
    public int awaitExit(Duration deadline) throws InterruptedException {
        if (!process.waitFor(deadline.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError(name + " still running after " + deadline + "; log " + log + ":\n" + tail());
        }
        return process.exitValue();
    }

    /** Resident memory of the service's process (VmRSS): heap, metaspace, native buffers, NIXL/UCX. */
    public long residentBytes() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(process.pid()), "status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        throw new AssertionError("no VmRSS for " + name);
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    /** The last lines of the log, for a failure message. */
    public String tail() {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException | UncheckedIOException e) {
            return "(log unreadable: " + e + ")";
        }
    }

    /** Sends {@code signal} (STOP, CONT) to the service's process, as an operator's kill(1) would. */
    public void signal(String signal) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start();
        if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            throw new AssertionError("kill -" + signal + " " + process.pid() + " failed");
        }
    }

    /** Kills the service with SIGKILL, as a crash or the OOM killer would: nothing of it runs a shutdown step. */
    public void kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(15, TimeUnit.SECONDS)) {
            throw new AssertionError(name + " survived SIGKILL for 15 s");
        }
    }

    /** Stops the service (SIGTERM, then SIGKILL after 15 s) and waits for it. */
    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(15, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(15, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    private static int freePort() throws IOException {
        return FreePort.pick();
    }

    /** An HTTP answer: status, raw body, content type, headers. */
    public record Reply(int status, byte[] body, String contentType, HttpHeaders headers) {

        /** The first value of header {@code name}, or null. */
        public String header(String name) {
            return headers.firstValue(name).orElse(null);
        }

        public String text() {
            return new String(body, StandardCharsets.UTF_8);
        }

        public JsonNode json() {
            try {
                return JSON.readTree(body);
            } catch (IOException e) {
                throw new AssertionError("not JSON (" + status + "): " + text(), e);
            }
        }

        @Override
        public String toString() {
            return status + " " + (contentType.contains("octet-stream") ? body.length + " bytes" : text());
        }
    }

    /** Where an IT's services write their logs: one directory per test class. */
    public static Path logsOf(Class<?> it) {
        return TARGET.resolve("it-logs").resolve(it.getSimpleName());
    }
}
