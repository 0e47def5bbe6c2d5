package io.pdconnector.testing;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.RegistryConfig;
import io.smallrye.config.WithDefault;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;

/**
 * A real etcd cluster of N members on loopback, one {@code etcd} process each (the process itself, not
 * a shell around it), for tests that must see what etcd really does when members stop, crash and come
 * back. Data directories live under {@code target/etcd-data/} and survive {@link #stop}/{@link #start}
 * (a member restarts with its state, as after a reboot); each member's log goes to
 * {@code target/it-logs/etcd/}. A missing {@code etcd} binary fails the test: scripts/setup.sh installs it.
 */
public final class EtcdCluster implements AutoCloseable {

    private static final Path TARGET = Path.of("target").toAbsolutePath();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofMillis(500)).build();
    private static final Duration STOP_DEADLINE = Duration.ofSeconds(10);

    private final String name;
    private final String binary;
    private final List<String> extraArgs;
    private final int[] clientPorts;
    private final int[] peerPorts;
    private final int[] metricsPorts;
    private final Path dataRoot;
    private final Path logDir;
    private final Process[] processes;

    private EtcdCluster(String name, int members, List<String> extraArgs) throws IOException {
        this.name = name;
        this.binary = etcdBinary();
        this.extraArgs = List.copyOf(extraArgs);
        int[] ports = freePorts(3 * members);
        this.clientPorts = java.util.Arrays.copyOfRange(ports, 0, members);
        this.peerPorts = java.util.Arrays.copyOfRange(ports, members, 2 * members);
        // /health over plain HTTP whatever the client URLs speak.
        this.metricsPorts = java.util.Arrays.copyOfRange(ports, 2 * members, 3 * members);
        this.dataRoot = Files.createDirectories(TARGET.resolve("etcd-data")).resolve(name + "-" + System.nanoTime());
        this.logDir = Files.createDirectories(TARGET.resolve("it-logs").resolve("etcd"));
        this.processes = new Process[members];
    }

    /** Starts {@code members} fresh members and waits, at most {@code deadline}, until each reports healthy. */
    public static EtcdCluster start(String name, int members, Duration deadline) throws IOException {
        return start(name, members, List.of(), deadline);
    }

    /** As {@link #start(String, int, Duration)}, each member also given {@code extraArgs} (auth, TLS, ...). */
    public static EtcdCluster start(String name, int members, List<String> extraArgs, Duration deadline)
            throws IOException {
        EtcdCluster c = new EtcdCluster(name, members, extraArgs);
        try {
            for (int i = 0; i < members; i++) {
                c.start(i);
            }
            c.awaitHealthy(deadline);
            return c;
        } catch (IOException | RuntimeException | Error e) {
            c.close();
            throw e;
        }
    }

    /**
     * The service's default {@code pd.registry.etcd.ttl}, read from its configuration so that the two cannot
     * drift: the TTL a test runs at when what it asserts is what a fleet on the defaults gets through an etcd
     * member failure (docs/operations.md, "Sizing pd.registry.etcd.ttl").
     */
    public static Duration serviceDefaultTtl() {
        try {
            String value = RegistryConfig.Etcd.class.getMethod("ttl").getAnnotation(WithDefault.class).value();
            return Duration.parse("PT" + value.toUpperCase(java.util.Locale.ROOT));
        } catch (NoSuchMethodException e) {
            throw new AssertionError("RegistryConfig.Etcd#ttl is gone", e);
        }
    }

    public int size() {
        return processes.length;
    }

    /** {@code http://127.0.0.1:port} of every member, running or not. */
    public List<String> clientUrls() {
        return IntStream.range(0, size()).mapToObj(this::clientUrl).toList();
    }

    public String clientUrl(int i) {
        return scheme() + "://127.0.0.1:" + clientPorts[i];
    }

    public boolean running(int i) {
        return processes[i] != null && processes[i].isAlive();
    }

    /**
     * (Re)starts member {@code i} with its data directory. Does not wait: a lone member of a stopped
     * cluster cannot be healthy until enough others are back; see {@link #awaitHealthy}.
     */
    public void start(int i) throws IOException {
        if (running(i)) {
            throw new IllegalStateException(member(i) + " is already running");
        }
        Path data = dataRoot.resolve(member(i));
        Files.createDirectories(data.getParent());
        List<String> cmd = new ArrayList<>(List.of(binary, "--name", member(i), "--data-dir", data.toString(),
                "--listen-client-urls", clientUrl(i), "--advertise-client-urls", clientUrl(i),
                "--listen-peer-urls", peerUrl(i), "--initial-advertise-peer-urls", peerUrl(i),
                "--initial-cluster", initialCluster(), "--initial-cluster-state", "new",
                "--initial-cluster-token", name, "--listen-metrics-urls", "http://127.0.0.1:" + metricsPorts[i],
                "--logger", "zap", "--log-outputs", "stderr"));
        cmd.addAll(extraArgs);
        Path log = logDir.resolve(name + "-" + member(i) + ".log");
        Files.writeString(log, "---- " + String.join(" ", cmd) + System.lineSeparator(), StandardCharsets.UTF_8,
                java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
        processes[i] = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    }

    /** SIGTERM (a graceful stop: a leader hands over first), then waits for the process to end. */
    public void stop(int i) {
        end(i, false);
    }

    /** SIGKILL, as a crash or a power cut: no hand-over. Waits for the process to end. */
    public void kill(int i) {
        end(i, true);
    }

    /** Waits until every running member reports healthy (it has a leader and answers a read). */
    public void awaitHealthy(Duration deadline) {
        long end = System.nanoTime() + deadline.toNanos();
        for (int i = 0; i < size(); i++) {
            if (processes[i] != null) {
                awaitHealthy(i, end, deadline);
            }
        }
    }

    private void awaitHealthy(int i, long endNanos, Duration deadline) {
        String last = "no answer";
        while (true) {
            assertTrue(running(i), () -> member(i) + " exited (" + processes[i].exitValue() + ") before it was "
                    + "healthy; log " + logOf(i) + ":\n" + tail(i));
            last = health(i).orElse(last);
            if (last.contains("\"health\":\"true\"")) {
                return;
            }
            assertTrue(System.nanoTime() < endNanos, member(i) + " not healthy within " + deadline + " (last: "
                    + last + "); log " + logOf(i) + ":\n" + tail(i));
            pause(100);
        }
    }

    private java.util.Optional<String> health(int i) {
        try {
            HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + metricsPorts[i]
                    + "/health")).timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
            return java.util.Optional.of(r.statusCode() + " " + r.body());
        } catch (IOException notListeningYet) {
            return java.util.Optional.of(notListeningYet.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** Kills every member and removes the data directories (the logs stay). */
    @Override
    public void close() {
        for (int i = 0; i < size(); i++) {
            if (processes[i] != null) {
                kill(i);
            }
        }
        try (Stream<Path> files = Files.exists(dataRoot) ? Files.walk(dataRoot) : Stream.empty()) {
            files.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
        } catch (IOException | UncheckedIOException e) {
            System.err.println("could not remove " + dataRoot + ": " + e);
        }
    }

    public Path logOf(int i) {
        return logDir.resolve(name + "-" + member(i) + ".log");
    }

    private void end(int i, boolean kill) {
        Process p = processes[i];
        if (p == null || !p.isAlive()) {
            return;
        }
        if (kill) {
            p.destroyForcibly();
        } else {
            p.destroy();
        }
        try {
            if (!p.waitFor(STOP_DEADLINE.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                assertTrue(p.waitFor(STOP_DEADLINE.toMillis(), TimeUnit.MILLISECONDS), member(i) + " did not end");
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    private String scheme() {
        return extraArgs.stream().anyMatch(a -> a.startsWith("--cert-file")) ? "https" : "http";
    }

    private String member(int i) {
        return "m" + i;
    }

    private String peerUrl(int i) {
        return "http://127.0.0.1:" + peerPorts[i];
    }

    private String initialCluster() {
        return IntStream.range(0, size()).mapToObj(i -> member(i) + "=" + peerUrl(i)).collect(Collectors.joining(","));
    }

    private String tail(int i) {
        try {
            List<String> lines = Files.readAllLines(logOf(i), StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "(log unreadable: " + e + ")";
        }
    }

    private static String etcdBinary() {
        String path = System.getenv().getOrDefault("PATH", "") + File.pathSeparator + "/usr/bin";
        for (String dir : path.split(File.pathSeparator)) {
            Path candidate = Path.of(dir.isEmpty() ? "." : dir, "etcd");
            if (Files.isExecutable(candidate)) {
                return candidate.toString();
            }
        }
        throw new AssertionError("no etcd binary on PATH (" + path + "): the etcd store's tests need a real etcd; "
                + "run scripts/setup.sh, which installs Debian's etcd-server");
    }

    /** Distinct ports free now, below the ephemeral range ({@link FreePort}); etcd binds them a moment later. */
    private static int[] freePorts(int n) throws IOException {
        Set<Integer> ports = new LinkedHashSet<>();
        for (int i = 0; ports.size() < n && i < 10 * n; i++) {
            ports.add(FreePort.pick());
        }
        if (ports.size() < n) {
            throw new IOException("could not pick " + n + " distinct free ports");
        }
        return ports.stream().mapToInt(Integer::intValue).toArray();
    }

    private static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}
