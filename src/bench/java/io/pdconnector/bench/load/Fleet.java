package io.pdconnector.bench.load;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * P+D pairs started from the packaged jar, each P and D its own OS process on 127.0.0.1 with real
 * NIXL: P in role producer; D in role consumer on the static registry listing its P only (D trusts
 * only its registry), started together and ready only once D lists P as a producer. Pools are sized
 * so that every request of the largest row fits twice over (P frees a request's blocks only when D's
 * notification arrives, a little after the pull's answer).
 */
public final class Fleet implements AutoCloseable {

    private static final Duration READY = Duration.ofSeconds(180);

    private final List<LocalService> services = new ArrayList<>();
    private final List<Target> targets = new ArrayList<>();
    private final Map<String, String> settings = new LinkedHashMap<>();

    private final Thread onExit = new Thread(this::stopAll, "fleet-stop");

    private Fleet() {
        Runtime.getRuntime().addShutdownHook(onExit); // Ctrl-C: stop the services too
    }

    public List<Target> targets() {
        return List.copyOf(targets);
    }

    /** The settings each service was started with (beyond its role, ids and addresses), for the result. */
    public Map<String, String> settings() {
        return Map.copyOf(settings);
    }

    public List<LocalService> services() {
        return List.copyOf(services);
    }

    /**
     * Starts one pair per entry of {@code verification} (named "" for a single pair, else "on"/"off"),
     * with pools of {@code blocks} KV blocks on each side; waits until all are ready.
     */
    public static Fleet start(Http http, List<Boolean> verification, int blocks, Path workDir, String runId)
            throws Exception {
        Fleet fleet = new Fleet();
        try {
            Path logs = workDir.resolve("logs").resolve(runId);
            Path state = workDir.resolve("state").resolve(runId);
            Files.createDirectories(state);
            fleet.settings.put("pd.kv.num-blocks", Integer.toString(blocks));
            fleet.settings.put("pd.registry.static.refresh-interval", "500ms");
            record Started(Target target, LocalService p, LocalService d, String engineId) {
            }
            List<Started> started = new ArrayList<>();
            for (boolean verify : verification) {
                String name = verification.size() == 1 ? "" : verify ? "on" : "off";
                String tag = name.isEmpty() ? "" : "-" + name;
                String engineId = "load-" + runId + "-p" + tag;
                Map<String, String> p = new LinkedHashMap<>();
                p.put("pd.role", "producer");
                p.put("pd.engine-id", engineId);
                p.put("pd.kv.num-blocks", Integer.toString(blocks));
                p.put("pd.lease.verification", Boolean.toString(verify));
                p.put("pd.lease.state-dir", Files.createDirectories(state.resolve("p" + tag)).toString());
                LocalService ps = fleet.add(LocalService.start("p" + tag, p, logs));
                Map<String, String> d = new LinkedHashMap<>();
                d.put("pd.role", "consumer");
                d.put("pd.engine-id", "load-" + runId + "-d" + tag);
                d.put("pd.kv.num-blocks", Integer.toString(blocks));
                d.put("pd.lease.verification", Boolean.toString(verify));
                d.put("pd.lease.state-dir", Files.createDirectories(state.resolve("d" + tag)).toString());
                d.put("pd.registry.store", "static");
                d.put("pd.registry.static.peers", "127.0.0.1:" + ps.port());
                d.put("pd.registry.static.refresh-interval", "500ms");
                LocalService ds = fleet.add(LocalService.start("d" + tag, d, logs));
                started.add(new Started(new Target(name, ps.uri, ds.uri, verify), ps, ds, engineId));
            }
            for (Started s : started) {
                s.p().awaitReady(http, READY);
                s.d().awaitReady(http, READY);
                s.d().awaitProducer(http, s.engineId(), READY);
                fleet.targets.add(s.target());
            }
            return fleet;
        } catch (Exception | Error e) {
            fleet.close();
            throw e;
        }
    }

    private synchronized LocalService add(LocalService s) {
        services.add(s);
        return s;
    }

    /** Every service still running (none died under load). */
    public List<String> dead() {
        return services.stream().filter(s -> !s.isAlive()).map(s -> s.name + " (log " + s.log + ")").toList();
    }

    @Override
    public void close() {
        stopAll();
        try {
            Runtime.getRuntime().removeShutdownHook(onExit);
        } catch (IllegalStateException shuttingDown) {
            // the hook is running or has run
        }
    }

    private synchronized void stopAll() {
        for (LocalService s : services.reversed()) {
            s.close();
        }
    }
}
