package io.pdconnector.bench.load;

import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.nixl.NixlDefaults;
import io.pdconnector.nixl.NixlHome;
import io.pdconnector.nixl.NixlTransferEngine;
import io.pdconnector.transfer.TransferEngine;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * {@code bench/run load}: load on a P and a D over HTTP (see {@link LoadOptions#USAGE}). Prints
 * {@code #} lines about the run, then one figure a line ({@code name value unit}); writes
 * {@code <out>/<timestamp>.json} and the plot beside it. Exit status 0, or 1 when a service died or
 * something was left held, 2 on bad options.
 */
public final class LoadMain {

    private static final PrintStream OUT = System.out;

    private LoadMain() {
    }

    public static void main(String[] args) throws Exception {
        LoadOptions options;
        try {
            options = LoadOptions.parse(args);
        } catch (IllegalArgumentException e) {
            boolean help = "help".equals(e.getMessage());
            (help ? OUT : System.err).print((help ? "" : "bench/run load: " + e.getMessage() + "\n") + LoadOptions.USAGE);
            System.exit(help ? 0 : 2);
            return;
        }
        System.exit(new LoadMain.Run(options, String.join(" ", args)).call());
    }

    /** One run of the tool. */
    static final class Run {

        private final LoadOptions o;
        private final String command;
        private final String runId = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
        private final long runStart = System.nanoTime();
        private final List<RowStats> rows = new ArrayList<>();
        private final Map<String, Object> leftHeld = new LinkedHashMap<>();
        private final JsonResult json = new JsonResult();

        Run(LoadOptions options, String command) {
            this.o = options;
            this.command = command;
        }

        int call() throws Exception {
            Map<String, Object> machine = machine();
            machine.put("load_average_start", loadAverage());
            OUT.printf("# bench/run load %s%n# machine: %s cores, %s; load average %s; commit %s%n", command,
                    machine.get("cores"), machine.get("cpu_model"), machine.get("load_average_start"),
                    machine.get("commit"));
            Fleet fleet = null;
            int status = 0;
            try (Http http = new Http(o.httpTimeout()); Progress progress = new Progress(o.progress(), System.err)) {
                List<Target> targets;
                if (o.startsFleet()) {
                    int blockTokens = ModelGeometry.DEFAULT.blockTokens();
                    // in flight (or prefilled ahead: twice that), plus blocks P frees a little after the pull
                    int held = (o.prefillAhead() ? 3 : 2) * o.maxConcurrency();
                    int blocks = Math.max(256, held * o.maxBlocks(blockTokens) + 64);
                    progress.note("starting " + (o.compareVerification() ? "two P+D pairs" : "P and D") + " from "
                            + LocalService.APP.resolve("quarkus-run.jar") + " (" + blocks + " KV blocks each)");
                    long t0 = System.nanoTime();
                    fleet = Fleet.start(http, o.compareVerification() ? List.of(true, false) : List.of(o.verification()),
                            blocks, o.out(), runId);
                    progress.note(String.format("fleet ready in %.1f s", (System.nanoTime() - t0) / 1e9));
                    targets = fleet.targets();
                } else {
                    awaitListed(http, o.producer(), o.consumer(), progress);
                    Http.Reply s = http.get(o.consumer(), "/v1/status");
                    targets = List.of(new Target("", o.producer(), o.consumer(),
                            s.json().path("lease_verification").asBoolean(true)));
                }
                ModelGeometry geometry = RawReader.geometry(http, targets.getFirst().producer());
                OUT.printf("# %s API, prefill %s, %s; fleet: %s; geometry %s (%d bytes a block, %d tokens)%n",
                        o.api().name().toLowerCase(), o.prefillAhead() ? "ahead" : "inline",
                        o.api() == LoadOptions.Api.NATIVE ? "release by "
                                + o.release().name().toLowerCase() : "max_tokens " + o.maxTokens(),
                        targets, geometry, geometry.blockBytes(1), geometry.blockTokens());
                Map<Target, LoadClient> clients = new LinkedHashMap<>();
                for (Target t : targets) {
                    clients.put(t, o.api() == LoadOptions.Api.NATIVE
                            ? new NativeClient(http, t.producer(), t.consumer(), o.release())
                            : new OpenAiClient(http, t.producer(), t.consumer(), o.maxTokens(), geometry.blockBytes(1)));
                }
                TransferEngine engine = o.rawRead() ? NixlTransferEngine.open(NixlHome.at(Path.of(System.getProperty(
                        "pd.nixl.home"))), true, NixlDefaults.PROGRESS_DELAY_US) : null;
                LoadRunner runner = new LoadRunner(runStart, o.prefillAhead());
                long maxNanos = o.maxSeconds().toNanos();
                long timeout = o.httpTimeout().toNanos();
                if (o.warmup() > 0) {
                    // every prompt length, so each row's path (and the reply's size) is compiled before it is timed
                    int each = Math.max(1, o.warmup() / o.tokens().size());
                    for (Target t : targets) {
                        progress.start("warm-up " + label(t, "all"), each * o.tokens().size());
                        for (TokenDistribution tokens : o.tokens()) {
                            runner.run(clients.get(t), new Workload(id(t, "warm-" + tokens.label()), tokens, o.seed()), 0, each,
                                    Math.min(8, o.maxConcurrency()), maxNanos, timeout, null, progress);
                        }
                    }
                }
                for (TokenDistribution tokens : o.tokens()) {
                    for (int c : o.concurrency()) {
                        row(http, engine, runner, clients, tokens, c, progress);
                    }
                }
                progress.finishLine();
                for (Target t : targets) {
                    leftHeld(http, t);
                }
                if (fleet != null && !fleet.dead().isEmpty()) {
                    OUT.println("# DIED under load: " + fleet.dead());
                    status = 1;
                }
            } finally {
                if (fleet != null) {
                    fleet.close();
                }
            }
            machine.put("load_average_end", loadAverage());
            double seconds = (System.nanoTime() - runStart) / 1e9;
            Report report = Report.of(rows);
            leftHeld.forEach((name, v) -> report.add(name, ((Number) v).doubleValue(), "count"));
            report.add("run_seconds", seconds, "s");
            report.print(OUT);
            long held = leftHeld.entrySet().stream().filter(e -> !e.getKey().endsWith("expired_unread"))
                    .mapToLong(e -> ((Number) e.getValue()).longValue()).sum();
            if (held > 0) {
                OUT.println("# LEFT HELD after the run: " + leftHeld);
                status = 1;
            }
            Path jsonFile = o.out().resolve(runId + ".json");
            Path plotBase = o.out().resolve(runId);
            json.root().put("tool", "bench/run load");
            json.root().put("command", command);
            json.root().put("run_id", runId);
            json.root().put("seconds", seconds);
            json.map("machine", machine);
            json.map("options", optionsMap());
            json.map("left_held", leftHeld);
            json.rows(rows);
            json.figures(report);
            List<Path> plots = PlotWriter.write(rows, plotBase, o.plot(), o.api().name().toLowerCase() + " API, "
                    + (o.startsFleet() ? "" : "external, ") + "run " + runId);
            json.root().putPOJO("plots", plots.stream().map(Path::toString).toList());
            json.write(jsonFile);
            OUT.println("# result " + jsonFile + "; plot " + String.join(", ", plots.stream().map(Path::toString)
                    .toList()));
            return status;
        }

        private void row(Http http, TransferEngine engine, LoadRunner runner, Map<Target, LoadClient> clients,
                TokenDistribution tokens, int c, Progress progress) throws Exception {
            List<Target> targets = new ArrayList<>(clients.keySet());
            Map<Target, RowStats> stats = new LinkedHashMap<>();
            long maxNanos = o.maxSeconds().toNanos();
            String rowKey = "c" + c + "_" + tokens.label();
            for (Target t : targets) {
                RowStats s = new RowStats(t.prefix() + rowKey, t.name(), c, tokens);
                stats.put(t, s);
                rows.add(s);
                if (engine != null) {
                    RawReader raw = new RawReader(engine, http, t.producer());
                    s.raw(raw.run(new Workload(id(t, rowKey + "-raw"), tokens, o.seed()), c, o.rawReads(),
                            Math.max(1000, 2 * c), maxNanos, progress, label(t, rowKey)));
                    s.trivial(TrivialHttp.measure(http, t.consumer(), o.trivialRequests(), maxNanos));
                }
            }
            for (Target t : targets) { // connections for every client, JIT of this length
                int n = Math.min(2 * c, o.requests());
                progress.start("warm-up " + label(t, rowKey), n);
                runner.run(clients.get(t), new Workload(id(t, rowKey + "-w"), tokens, o.seed() + 1), 0, n, c, maxNanos,
                        o.httpTimeout().toNanos(), null, progress);
            }
            int rounds = o.rounds();
            long chunkNanos = maxNanos / ((long) rounds * targets.size());
            int sent = 0;
            for (int k = 0; k < rounds; k++) {
                int count = o.requests() * (k + 1) / rounds - o.requests() * k / rounds;
                // ABBA order: each pair goes first as often as second
                List<Target> order = k % 2 == 0 ? targets : targets.reversed();
                for (Target t : order) {
                    progress.start(label(t, rowKey) + (rounds > 1 ? " " + (k + 1) + "/" + rounds : ""), count);
                    runner.run(clients.get(t), new Workload(id(t, rowKey), tokens, o.seed()), sent, count, c,
                            chunkNanos, o.httpTimeout().toNanos(), stats.get(t), progress);
                }
                sent += count;
            }
            progress.finishLine();
        }

        /** D trusts only its registry: waits (up to a minute) until D lists P as a producer. */
        private static void awaitListed(Http http, java.net.URI producer, java.net.URI consumer, Progress progress)
                throws Exception {
            Http.Reply p = http.get(producer, "/v1/status");
            String engineId = p.json().path("engine_id").asText("");
            if (p.status() != 200 || !p.json().has("producer")) {
                throw new IllegalStateException(producer + " is not a producer: GET /v1/status answered " + p.status()
                        + " " + p.text());
            }
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!LocalService.listsProducer(http.get(consumer, "/v1/registry"), engineId)) {
                if (System.nanoTime() > end) {
                    throw new IllegalStateException(consumer + " does not list producer " + engineId + " (" + producer
                            + ") in GET /v1/registry after 60 s: start D with -Dpd.registry.store=static"
                            + " -Dpd.registry.static.peers=" + producer.getHost() + ":" + producer.getPort());
                }
                progress.note("waiting for D to list producer " + engineId);
                Thread.sleep(1000);
            }
        }

        /** What P and D still hold once the run is over (waiting up to 15 s for releases in flight). */
        private void leftHeld(Http http, Target t) throws Exception {
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            Map<String, Long> last = new LinkedHashMap<>();
            do {
                var p = http.get(t.producer(), "/v1/status").json().path("producer");
                var d = http.get(t.consumer(), "/v1/status").json().path("consumer");
                last.clear();
                last.put("p_leases", p.path("leases_live").asLong());
                last.put("p_blocks", p.path("blocks_in_use").asLong());
                last.put("p_slots", p.path("slots_in_use").asLong());
                last.put("d_pulls", d.path("pulls_live").asLong());
                last.put("d_blocks", d.path("blocks_in_use").asLong());
                if (last.values().stream().allMatch(v -> v == 0)) {
                    last.put("d_pulls_expired_unread", d.path("pulls_expired_unread").asLong());
                    break;
                }
                last.put("d_pulls_expired_unread", d.path("pulls_expired_unread").asLong());
                Thread.sleep(200);
            } while (System.nanoTime() < end);
            last.forEach((k, v) -> leftHeld.put(t.prefix() + "left_held_" + k, v));
        }

        private String id(Target t, String what) {
            return "ld" + runId + (t.name().isEmpty() ? "" : "-" + t.name()) + "-" + what;
        }

        private static String label(Target t, String row) {
            return (t.name().isEmpty() ? "" : t.name() + " ") + row;
        }

        private Map<String, Object> optionsMap() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("producer", o.producer() == null ? null : o.producer().toString());
            m.put("consumer", o.consumer() == null ? null : o.consumer().toString());
            m.put("requests", o.requests());
            m.put("max_seconds", o.maxSeconds().toSeconds());
            m.put("concurrency", o.concurrency());
            m.put("tokens", o.tokens().stream().map(TokenDistribution::toString).toList());
            m.put("api", o.api().name().toLowerCase());
            m.put("release", o.release().name().toLowerCase());
            m.put("prefill", o.prefillAhead() ? "ahead" : "inline");
            m.put("max_tokens", o.maxTokens());
            m.put("compare_verification", o.compareVerification());
            m.put("rounds", o.rounds());
            m.put("raw_read", o.rawRead());
            m.put("raw_reads", o.rawReads());
            m.put("verification", o.verification());
            m.put("warmup", o.warmup());
            m.put("trivial_requests", o.trivialRequests());
            m.put("http_timeout_s", o.httpTimeout().toSeconds());
            m.put("seed", o.seed());
            return m;
        }
    }

    static Map<String, Object> machine() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("cores", Runtime.getRuntime().availableProcessors());
        m.put("cpu_model", cpuModel());
        m.put("java", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
        m.put("commit", git());
        return m;
    }

    private static String cpuModel() {
        try {
            return Files.readAllLines(Path.of("/proc/cpuinfo")).stream().filter(l -> l.startsWith("model name"))
                    .map(l -> l.substring(l.indexOf(':') + 1).strip()).findFirst().orElse("unknown");
        } catch (IOException e) {
            return "unknown";
        }
    }

    static String loadAverage() {
        try {
            String[] parts = Files.readString(Path.of("/proc/loadavg")).split(" ");
            return parts[0] + " " + parts[1] + " " + parts[2];
        } catch (IOException e) {
            return "unknown";
        }
    }

    private static String git() {
        try {
            Process p = new ProcessBuilder("git", "describe", "--always", "--dirty").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0 ? out : "unknown";
        } catch (IOException e) {
            return "unknown";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "unknown";
        }
    }
}
