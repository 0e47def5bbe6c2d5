package io.pdconnector.bench;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.config.ProducerConfig;
import io.pdconnector.consumer.ConsumerCounters;
import io.pdconnector.consumer.ConsumerFacade;
import io.pdconnector.consumer.PullOutcome;
import io.pdconnector.consumer.PullScheduler;
import io.pdconnector.consumer.PullState;
import io.pdconnector.testing.InProcessDirectory;
import io.pdconnector.loop.StepLoop;
import io.pdconnector.nixl.NixlDefaults;
import io.pdconnector.nixl.NixlHome;
import io.pdconnector.nixl.NixlTransferEngine;
import io.pdconnector.producer.LeaseScheduler;
import io.pdconnector.producer.ProducerFacade;
import io.pdconnector.protocol.KvTransferParams;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Pull latency and throughput through the connector core on real NIXL (P's and D's step loops on
 * their own threads, as the service runs them; no HTTP), at concurrency 1, 16 and 64, with lease
 * verification on and off in the same run. Each client prefills a 64-token prompt on P, pulls it on D
 * (the measured part), then releases it. Prints {@code name value unit} lines.
 */
public final class PullBench {

    private static final Duration DEADLINE = Duration.ofSeconds(60);
    private static final int TOKENS = 64;

    private PullBench() {
    }

    public static void main(String[] args) throws Exception {
        int pullsPerRun = args.length > 0 ? Integer.parseInt(args[0]) : 640;
        NixlTransferEngine engine = NixlTransferEngine.open(NixlHome.at(Path.of(System.getProperty("pd.nixl.home"))),
                true, Long.getLong("pd.nixl.progress-delay-us", NixlDefaults.PROGRESS_DELAY_US));
        System.out.println("# " + Runtime.getRuntime().availableProcessors() + " cores; " + TOKENS
                + "-token prompts (default geometry: 4 blocks, 768 KiB a pull); " + pullsPerRun
                + " measured pulls per row after " + pullsPerRun / 4 + " warm-up pulls");
        for (Mode mode : Mode.values()) {
            for (int concurrency : new int[] {1, 16, 64}) {
                run(engine, mode, concurrency, pullsPerRun);
            }
        }
    }

    /**
     * {@code verified}: the slot READ is posted as soon as a pull's block READs are done and spun on
     * inside the same step; {@code verified_nospin}: polled once per step, as upstream checks it on
     * the next step; {@code unverified}: no slot READ at all (L10), the baseline.
     */
    enum Mode {
        verified(true, 10_000), verified_nospin(true, 1), unverified(false, 1);

        final boolean verify;
        final int spins;

        Mode(boolean verify, int spins) {
            this.verify = verify;
            this.spins = spins;
        }
    }

    private static void run(NixlTransferEngine engine, Mode mode, int concurrency, int pulls) throws Exception {
        Path state = Files.createTempDirectory("pull-bench");
        boolean verify = mode.verify;
        String tag = mode.name() + "_c" + concurrency;
        InProcessDirectory registry = new InProcessDirectory();
        ProducerConfig pc = ProducerConfig.builder("bench-p-" + tag, state).blocks(1024, 128, 0)
                .verification(verify).build();
        ConsumerConfig dc = ConsumerConfig.builder("bench-d-" + tag).blocks(1024).verification(verify)
                .slotReadSpins(mode.spins).build();
        LeaseScheduler p = new LeaseScheduler(pc, engine, registry, InstantSource.system());
        PullScheduler d = new PullScheduler(dc, engine, registry, InstantSource.system());
        try (StepLoop pLoop = StepLoop.start(p, DEADLINE); StepLoop dLoop = StepLoop.start(d, DEADLINE)) {
            ProducerFacade producer = new ProducerFacade(p, DEADLINE);
            ConsumerFacade consumer = new ConsumerFacade(d, DEADLINE);
            drive(producer, consumer, concurrency, pulls / 4, "warm-" + tag);
            ConsumerCounters c = d.counters();
            long slotReads0 = c.slotReads.get();
            long polls0 = c.slotReadPolls.get();
            long start = System.nanoTime();
            long[] latencies = drive(producer, consumer, concurrency, pulls, tag);
            double seconds = (System.nanoTime() - start) / 1e9;
            Arrays.sort(latencies);
            line("pull_p50_" + tag, pct(latencies, 50) / 1e3, "us");
            line("pull_p90_" + tag, pct(latencies, 90) / 1e3, "us");
            line("pull_p99_" + tag, pct(latencies, 99) / 1e3, "us");
            line("pulls_per_s_" + tag, pulls / seconds, "pulls/s");
            if (verify) {
                long reads = c.slotReads.get() - slotReads0;
                line("slot_reads_per_pull_" + tag, reads / (double) pulls, "reads");
                line("slot_read_polls_per_read_" + tag, (c.slotReadPolls.get() - polls0) / (double) Math.max(1, reads),
                        "polls");
            }
        }
    }

    private static long[] drive(ProducerFacade producer, ConsumerFacade consumer, int concurrency, int pulls, String tag)
            throws Exception {
        AtomicInteger next = new AtomicInteger();
        long[] latencies = new long[pulls];
        ExecutorService pool = Executors.newFixedThreadPool(concurrency);
        try {
            List<Future<?>> clients = new ArrayList<>();
            for (int t = 0; t < concurrency; t++) {
                clients.add(pool.submit(() -> {
                    for (int i; (i = next.getAndIncrement()) < pulls;) {
                        String id = tag + "-" + i;
                        int[] tokens = prompt(i);
                        KvTransferParams params = producer.prefill(id, tokens);
                        long t0 = System.nanoTime();
                        PullOutcome o = consumer.pull(id, tokens, params);
                        latencies[i] = System.nanoTime() - t0;
                        if (o.state() != PullState.RECEIVED) {
                            throw new IllegalStateException(id + " was " + o.state() + " (" + o.reason() + ")");
                        }
                        consumer.release(id);
                    }
                    return null;
                }));
            }
            for (Future<?> f : clients) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        return latencies;
    }

    private static int[] prompt(int seed) {
        int[] t = new int[TOKENS];
        for (int i = 0; i < TOKENS; i++) {
            t[i] = Math.floorMod(seed * 31 + i * 7919, 151_936);
        }
        return t;
    }

    private static long pct(long[] sorted, int p) {
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p / 100.0 * sorted.length) - 1)];
    }

    private static void line(String name, double value, String unit) {
        System.out.printf("%s %.1f %s%n", name, value, unit);
    }
}
