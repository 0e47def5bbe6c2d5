package io.pdconnector.bench;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.config.ProducerConfig;
import io.pdconnector.consumer.ConsumerCounters;
import io.pdconnector.consumer.ConsumerFacade;
import io.pdconnector.consumer.PullOutcome;
import io.pdconnector.consumer.PullScheduler;
import io.pdconnector.consumer.PullState;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.loop.StepLoop;
import io.pdconnector.nixl.NixlDefaults;
import io.pdconnector.nixl.NixlHome;
import io.pdconnector.nixl.NixlTransferEngine;
import io.pdconnector.producer.LeaseScheduler;
import io.pdconnector.producer.ProducerFacade;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.InProcessDirectory;
import io.pdconnector.transfer.TransferEngine;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * D's step cost against the requests decided in one step and P's tensor-parallel ranks (the remote
 * ranks D reads from), on real NIXL agents in one process. P runs its own step loop; D's worker is
 * stepped by this thread, so each step is timed alone: N pull commands are queued, then D steps
 * until all N are decided. Prints {@code name value unit} lines: the step that took the commands, the
 * steps and time until all were decided, the same per request and as a ratio to N = 1 of the same R,
 * the slot READs posted (most in any one step, which L5's batching keeps at R), and the loop thread's
 * allocation per pull. Prompts are one block of a small geometry, so the bytes moved are few and
 * the figure is the loop's own cost.
 */
public final class StepBench {

    static final Duration DEADLINE = Duration.ofSeconds(60);
    static final int[] REQUESTS = {1, 4, 16, 64, 256, 1024};
    static final int[] RANKS = {1, 2, 4, 8};
    static final int MAX_REQUESTS = 1024;
    /** 8 KV heads so that P can run 1-8 ranks; one block is 8 KiB in all (1 layer, 16 tokens). */
    static final ModelGeometry GEOMETRY = new ModelGeometry(1, 8, 16, 16, 2);
    private static final long STEP_DEADLINE_NANOS = Duration.ofSeconds(30).toNanos();

    private StepBench() {
    }

    public static void main(String[] args) throws Exception {
        int budget = args.length > 0 ? Integer.parseInt(args[0]) : 2048;
        int[] ranks = args.length > 1 ? Arrays.stream(args[1].split(",")).mapToInt(Integer::parseInt).toArray()
                : RANKS;
        NixlTransferEngine engine = openNixl();
        try {
            System.out.println("# " + Runtime.getRuntime().availableProcessors() + " cores; load average "
                    + loadAverage() + "; one-block prompts of " + GEOMETRY + "; about " + budget
                    + " measured pulls per cell (at least 5 repetitions)");
            List<StepPlot.Cell> cells = new ArrayList<>();
            for (int r : ranks) {
                try (Pair pair = Pair.open(engine, r, "step-r" + r)) {
                    pair.once(1); // the handshake
                    double perRequestAt1 = 0;
                    for (int n : REQUESTS) {
                        Cell cell = pair.measure(n, Math.max(5, budget / n), Math.max(2, budget / n / 4));
                        if (n == 1) {
                            perRequestAt1 = cell.perRequestNanos();
                        }
                        cell.print(r, n, perRequestAt1);
                        cells.add(new StepPlot.Cell(r, n, cell.firstStepNanos(), cell.perRequestNanos()));
                    }
                    // after the cells, so the step is compiled as it runs in a warm service
                    line("idle_step_allocated_r" + r, pair.idleStepAllocation(10_000), "bytes");
                }
            }
            System.out.println("# load average at the end " + loadAverage());
            Path plot = StepPlot.write(cells, Path.of("target", "bench"));
            System.out.println("# plot " + plot);
        } finally {
            engine.close();
        }
    }

    static NixlTransferEngine openNixl() {
        return NixlTransferEngine.open(NixlHome.at(Path.of(System.getProperty("pd.nixl.home"))), true,
                Long.getLong("pd.nixl.progress-delay-us", NixlDefaults.PROGRESS_DELAY_US));
    }

    static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).trim().split(" ", 4)[0];
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }

    /** Medians over the repetitions of one (R, N) cell. */
    record Cell(long firstStepNanos, long allDecidedNanos, double steps, double decidedInFirstStep,
            double slotReadsPerRepetition, long maxSlotReadsInOneStep, double allocatedBytesPerPull,
            double pollsPerSlotRead, int n) {

        double perRequestNanos() {
            return allDecidedNanos / (double) n;
        }

        void print(int r, int n, double perRequestAt1) {
            String tag = "_r" + r + "_n" + n;
            line("first_step" + tag, firstStepNanos / 1e3, "us");
            line("all_decided" + tag, allDecidedNanos / 1e3, "us");
            line("steps_to_decide" + tag, steps, "steps");
            line("decided_in_first_step" + tag, decidedInFirstStep, "fraction");
            line("per_request" + tag, perRequestNanos() / 1e3, "us");
            line("per_request_over_n1" + tag, perRequestNanos() / perRequestAt1, "ratio");
            line("slot_reads_per_repetition" + tag, slotReadsPerRepetition, "reads");
            line("max_slot_reads_in_one_step" + tag, maxSlotReadsInOneStep, "reads");
            line("slot_read_polls_per_read" + tag, pollsPerSlotRead, "polls");
            line("loop_allocated_per_pull" + tag, allocatedBytesPerPull, "bytes");
            if (maxSlotReadsInOneStep > r) {
                throw new IllegalStateException("L5: " + maxSlotReadsInOneStep + " slot READs in one step against "
                        + r + " remote ranks (N=" + n + ")");
            }
        }
    }

    /** P on its own loop, D stepped by the caller; one P with {@code ranks} ranks, one D with one rank. */
    static final class Pair implements AutoCloseable {

        final LeaseScheduler p;
        final PullScheduler d;
        final StepLoop pLoop;
        final ProducerFacade producer;
        final ConsumerFacade consumer;
        final int ranks;
        final String tag;
        private int serial;

        private Pair(LeaseScheduler p, PullScheduler d, StepLoop pLoop, int ranks, String tag) {
            this.p = p;
            this.d = d;
            this.pLoop = pLoop;
            this.producer = new ProducerFacade(p, DEADLINE);
            this.consumer = new ConsumerFacade(d, DEADLINE);
            this.ranks = ranks;
            this.tag = tag;
        }

        static Pair open(TransferEngine engine, int ranks, String tag) throws Exception {
            return open(engine, ranks, tag, 4 * MAX_REQUESTS, 2 * MAX_REQUESTS, 0);
        }

        /** {@code leaseSlots} 0: P's default (blocks + max_num_seqs). */
        static Pair open(TransferEngine engine, int ranks, String tag, int producerBlocks, int consumerBlocks,
                int leaseSlots) throws Exception {
            Path state = Files.createTempDirectory("step-bench");
            InProcessDirectory registry = new InProcessDirectory();
            ProducerConfig pc = ProducerConfig.builder("bench-p-" + tag, state).geometry(GEOMETRY).tpSize(ranks)
                    .blocks(producerBlocks, MAX_REQUESTS, leaseSlots).commandQueueCapacity(4 * MAX_REQUESTS).build();
            ConsumerConfig dc = ConsumerConfig.builder("bench-d-" + tag).geometry(GEOMETRY).blocks(consumerBlocks)
                    .slotChecksPerRead(MAX_REQUESTS).commandQueueCapacity(4 * MAX_REQUESTS).build();
            LeaseScheduler p = new LeaseScheduler(pc, engine, registry, InstantSource.system());
            PullScheduler d = new PullScheduler(dc, engine, registry, InstantSource.system());
            StepLoop pLoop = StepLoop.start(p, DEADLINE);
            try {
                d.open();
            } catch (RuntimeException e) {
                pLoop.close();
                throw e;
            }
            return new Pair(p, d, pLoop, ranks, tag);
        }

        Cell measure(int n, int repetitions, int warmups) throws Exception {
            for (int i = 0; i < warmups; i++) {
                once(n);
            }
            long[] first = new long[repetitions];
            long[] all = new long[repetitions];
            double steps = 0;
            double decidedFirst = 0;
            double slotReads = 0;
            double allocated = 0;
            double polls = 0;
            long maxInStep = 0;
            for (int i = 0; i < repetitions; i++) {
                Repetition rep = once(n);
                first[i] = rep.firstStepNanos;
                all[i] = rep.allDecidedNanos;
                steps += rep.steps;
                decidedFirst += rep.decidedInFirstStep / (double) n;
                slotReads += rep.slotReads;
                allocated += rep.allocatedBytes / (double) n;
                polls += rep.slotReadPolls;
                maxInStep = Math.max(maxInStep, rep.maxSlotReadsInOneStep);
            }
            Arrays.sort(first);
            Arrays.sort(all);
            return new Cell(first[repetitions / 2], all[repetitions / 2], steps / repetitions,
                    decidedFirst / repetitions, slotReads / repetitions, maxInStep, allocated / repetitions,
                    polls / Math.max(1, slotReads), n);
        }

        /** What one repetition saw: N pulls queued, D stepped until all are decided, then released. */
        record Repetition(long firstStepNanos, long allDecidedNanos, int steps, int decidedInFirstStep,
                long slotReads, long maxSlotReadsInOneStep, long allocatedBytes, long slotReadPolls) {
        }

        Repetition once(int n) throws Exception {
            List<String> ids = new ArrayList<>(n);
            List<int[]> prompts = new ArrayList<>(n);
            List<CompletableFuture<KvTransferParams>> prefills = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                String id = tag + "-" + serial++;
                ids.add(id);
                prompts.add(prompt(serial));
                prefills.add(producer.submitPrefill(id, prompts.get(i)));
            }
            List<CompletableFuture<PullOutcome>> pulls = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                KvTransferParams params = prefills.get(i).get(DEADLINE.toSeconds(), java.util.concurrent.TimeUnit.SECONDS);
                pulls.add(consumer.submitPull(ids.get(i), prompts.get(i), params));
            }
            ConsumerCounters c = d.counters();
            long slotReads0 = c.slotReads.get();
            long polls0 = c.slotReadPolls.get();
            long maxInStep = 0;
            int steps = 0;
            int decidedFirst = -1;
            long firstStep = 0;
            long allocated = 0; // inside D's steps only, not this loop's own checks
            long start = System.nanoTime();
            long end = start;
            while (true) {
                long before = c.slotReads.get();
                long a0 = allocatedBytes();
                long t0 = System.nanoTime();
                d.doWork();
                long t1 = System.nanoTime();
                allocated += allocatedBytes() - a0;
                steps++;
                maxInStep = Math.max(maxInStep, c.slotReads.get() - before);
                if (decidedFirst < 0) {
                    firstStep = t1 - t0;
                    decidedFirst = (int) pulls.stream().filter(CompletableFuture::isDone).count();
                }
                if (pulls.stream().allMatch(CompletableFuture::isDone)) {
                    end = t1;
                    break;
                }
                if (t1 - start > STEP_DEADLINE_NANOS) {
                    throw new IllegalStateException(n + " pulls not decided within " + STEP_DEADLINE_NANOS / 1e9 + " s");
                }
            }
            long slotReads = c.slotReads.get() - slotReads0;
            long polls = c.slotReadPolls.get() - polls0;
            for (int i = 0; i < n; i++) {
                PullOutcome o = pulls.get(i).join();
                if (o.state() != PullState.RECEIVED) {
                    throw new IllegalStateException(ids.get(i) + " was " + o.state() + " (" + o.reason() + ")");
                }
            }
            releaseAll(ids);
            return new Repetition(firstStep, end - start, steps, decidedFirst, slotReads, maxInStep, allocated, polls);
        }

        /** Bytes the loop allocates in a step with nothing to do (a peer known, nothing held). */
        double idleStepAllocation(int steps) {
            long a0 = allocatedBytes();
            for (int i = 0; i < steps; i++) {
                d.doWork();
            }
            return (allocatedBytes() - a0) / (double) steps;
        }

        void releaseAll(List<String> ids) {
            List<CompletableFuture<Void>> released = new ArrayList<>(ids.size());
            for (String id : ids) {
                released.add(consumer.submitRelease(id));
            }
            stepUntil(() -> released.stream().allMatch(CompletableFuture::isDone));
            released.forEach(CompletableFuture::join);
        }

        void stepUntil(java.util.function.BooleanSupplier done) {
            long start = System.nanoTime();
            while (!done.getAsBoolean()) {
                d.doWork();
                if (System.nanoTime() - start > STEP_DEADLINE_NANOS) {
                    throw new IllegalStateException("D's loop did not answer within " + STEP_DEADLINE_NANOS / 1e9 + " s");
                }
            }
        }

        @Override
        public void close() {
            try {
                d.close();
            } finally {
                pLoop.close();
            }
        }
    }

    /** Bytes this thread (the stepped loop's thread) has allocated so far. */
    static long allocatedBytes() {
        return ((com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean())
                .getCurrentThreadAllocatedBytes();
    }

    static int[] prompt(int seed) {
        int[] t = new int[GEOMETRY.blockTokens()];
        for (int i = 0; i < t.length; i++) {
            t[i] = Math.floorMod(seed * 31 + i * 7919, 151_936);
        }
        return t;
    }

    static void line(String name, double value, String unit) {
        System.out.printf("%s %.3f %s%n", name, value, unit);
    }
}
