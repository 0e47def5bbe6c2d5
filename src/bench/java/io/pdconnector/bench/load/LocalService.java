package io.pdconnector.bench.load;

import com.fasterxml.jackson.databind.JsonNode;
import io.pdconnector.testing.FreePort;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One packaged service ({@code target/quarkus-app/quarkus-run.jar}) as its own OS process on
 * 127.0.0.1, started as an operator would (unlike the tests' {@code ServiceProcess}, on the JVM's
 * default compilers and GC, so what is measured is what runs in production), its output in a log file.
 */
public final class LocalService implements AutoCloseable {

    static final Path APP = Path.of(System.getProperty("pd.load.app", "target/quarkus-app"));

    public final String name;
    public final URI uri;
    public final Path log;
    private final Process process;

    private LocalService(String name, URI uri, Path log, Process process) {
        this.name = name;
        this.uri = uri;
        this.log = log;
        this.process = process;
    }

    /** Starts the jar with {@code settings} as {@code -D} options on a free port; does not wait. */
    public static LocalService start(String name, Map<String, String> settings, Path logDir) throws IOException {
        Path jar = APP.resolve("quarkus-run.jar");
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException("no packaged service at " + jar + " (./mvnw package -DskipTests)");
        }
        int port = FreePort.pick(); // below the ephemeral range: no outgoing connection or NIXL listener takes it first
        Map<String, String> all = new LinkedHashMap<>();
        all.put("pd.nixl.home", System.getProperty("pd.nixl.home"));
        all.put("quarkus.http.host", "127.0.0.1");
        all.put("quarkus.http.port", Integer.toString(port));
        all.putAll(settings);
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-Xmx1g"));
        cmd.addAll(extraJvmOptions(name, logDir));
        all.forEach((k, v) -> cmd.add("-D" + k + "=" + v));
        cmd.addAll(List.of("-jar", jar.toString()));
        Files.createDirectories(logDir);
        Path log = logDir.resolve(name + ".log");
        Files.writeString(log, String.join(" ", cmd) + System.lineSeparator());
        Process process = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        return new LocalService(name, URI.create("http://127.0.0.1:" + port), log, process);
    }

    /**
     * {@code -Dpd.load.service-jvm-options="..."}: extra JVM options for every started service, space
     * separated, {@code {name}} and {@code {dir}} replaced by the service's name and log directory (a
     * JFR recording per service: {@code -XX:StartFlightRecording=filename={dir}/{name}.jfr,settings=profile}).
     */
    static List<String> extraJvmOptions(String name, Path logDir) {
        String options = System.getProperty("pd.load.service-jvm-options", "").strip();
        if (options.isEmpty()) {
            return List.of();
        }
        List<String> out = new ArrayList<>();
        for (String o : options.split("\\s+")) {
            out.add(o.replace("{name}", name).replace("{dir}", logDir.toAbsolutePath().toString()));
        }
        return out;
    }

    public int port() {
        return uri.getPort();
    }

    /** Polls {@code /q/health/ready} until 200; throws with the log's tail if the process dies or time runs out. */
    public void awaitReady(Http http, Duration deadline) throws Exception {
        awaitJson(http, "/q/health/ready", "ready", r -> r.status() == 200, deadline);
    }

    /** Polls {@code GET /v1/registry} until it lists {@code engineId} as a producer. */
    public void awaitProducer(Http http, String engineId, Duration deadline) throws Exception {
        awaitJson(http, "/v1/registry", "producer " + engineId + " listed", r -> listsProducer(r, engineId), deadline);
    }

    /** Whether a {@code GET /v1/registry} answer lists {@code engineId} as a producer. */
    static boolean listsProducer(Http.Reply registry, String engineId) {
        if (registry.status() != 200) {
            return false;
        }
        for (JsonNode i : registry.json().path("instances")) {
            if (i.path("engine_id").asText().equals(engineId) && i.path("producer").asBoolean()) {
                return true;
            }
        }
        return false;
    }

    private void awaitJson(Http http, String path, String what, java.util.function.Predicate<Http.Reply> ok,
            Duration deadline) throws Exception {
        long end = System.nanoTime() + deadline.toNanos();
        String last = "no answer";
        while (System.nanoTime() < end) {
            if (!process.isAlive()) {
                throw new IllegalStateException(name + " exited with " + process.exitValue() + " before " + what
                        + "; log " + log + ":\n" + tail());
            }
            try {
                Http.Reply r = http.get(uri, path);
                if (ok.test(r)) {
                    return;
                }
                last = r.status() + " " + r.text();
            } catch (IOException notYet) {
                last = notYet.toString();
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException(name + ": " + what + " not reached within " + deadline + " (last: " + last
                + "); log " + log + ":\n" + tail());
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    String tail() {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
        } catch (IOException e) {
            return "(log unreadable: " + e + ")";
        }
    }

    /** SIGTERM, then SIGKILL after 15 s; waits for the process. */
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
}
