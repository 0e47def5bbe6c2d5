package io.pdconnector.bench;

import io.pdconnector.consumer.PullOutcome;
import io.pdconnector.consumer.PullState;
import io.pdconnector.nixl.NixlTransferEngine;
import io.pdconnector.protocol.KvTransferParams;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Heap and resident bytes per held request on P (a lease: blocks, slot, nonce, its params), per
 * decided pull held on D, and per lease slot (P's registered slot array and D's prepared list of a
 * peer's slots), on real NIXL agents in one process (StepBench's pair: P on its loop, D stepped here).
 * Heap is the live bytes {@code jcmd GC.class_histogram} counts; resident is /proc/self/statm's RSS, which
 * sees native memory NIXL and UCX allocate outside the JVM's accounting ({@code bench/run memory} starts
 * the JVM with its whole heap committed and touched, so the Java heap does not move RSS). Prints
 * {@code name value unit}.
 */
public final class MemoryBench {

    private MemoryBench() {
    }

    public static void main(String[] args) throws Exception {
        int held = args.length > 0 ? Integer.parseInt(args[0]) : StepBench.MAX_REQUESTS;
        int extraSlots = args.length > 1 ? Integer.parseInt(args[1]) : 65_536;
        NixlTransferEngine engine = StepBench.openNixl();
        try {
            System.out.println("# " + Runtime.getRuntime().availableProcessors() + " cores; load average "
                    + StepBench.loadAverage() + "; " + held + " held requests, one block of "
                    + StepBench.GEOMETRY + " each; slots measured as the difference of " + extraSlots + " slots");
            perRequest(engine, held);
            perSlot(engine, extraSlots);
            System.out.println("# load average at the end " + StepBench.loadAverage());
        } finally {
            engine.close();
        }
    }

    private static void perRequest(NixlTransferEngine engine, int held) throws Exception {
        try (StepBench.Pair pair = StepBench.Pair.open(engine, 1, "mem", 2 * held, 2 * held, 0)) {
            for (int i = 0; i < 3; i++) { // the handshake, JIT, and every KV page of the blocks reused below touched
                pair.once(held);
            }
            Usage base = Usage.settled();
            List<String> ids = new ArrayList<>(held);
            List<int[]> prompts = new ArrayList<>(held);
            List<CompletableFuture<KvTransferParams>> prefills = new ArrayList<>(held);
            for (int i = 0; i < held; i++) {
                ids.add("mem-held-" + i);
                prompts.add(StepBench.prompt(1_000_000 + i));
                prefills.add(pair.producer.submitPrefill(ids.get(i), prompts.get(i)));
            }
            List<KvTransferParams> params = new ArrayList<>(held);
            for (CompletableFuture<KvTransferParams> f : prefills) {
                params.add(f.get(StepBench.DEADLINE.toSeconds(), TimeUnit.SECONDS));
            }
            prefills = null;
            Usage leases = Usage.settled();
            // what the caller holds for each request (its params and prompt), measured on equal copies
            List<Object> copies = new ArrayList<>(2 * held);
            for (int i = 0; i < held; i++) {
                copies.add(KvTransferParams.fromMap(params.get(i).toMap()));
                copies.add(prompts.get(i).clone());
            }
            Usage callers = Usage.settled().minus(leases);
            copies = null;
            report("caller_params_and_prompt", callers, held);
            report("held_lease_with_caller", leases.minus(base), held);
            report("held_lease", leases.minus(base).minus(callers), held);
            List<CompletableFuture<PullOutcome>> pulls = new ArrayList<>(held);
            for (int i = 0; i < held; i++) {
                pulls.add(pair.consumer.submitPull(ids.get(i), prompts.get(i), params.get(i)));
            }
            params = null;
            prompts = null;
            pair.stepUntil(() -> pulls.stream().allMatch(CompletableFuture::isDone));
            for (CompletableFuture<PullOutcome> f : pulls) {
                if (f.join().state() != PullState.RECEIVED) {
                    throw new IllegalStateException("a held pull was " + f.join().state());
                }
            }
            pulls.clear();
            awaitLeasesReleased(pair); // P forgets each lease once D's notification arrives
            Usage pulled = Usage.settled();
            report("held_pull", pulled.minus(base), held);
            pair.releaseAll(ids);
            Usage released = Usage.settled();
            report("after_release", released.minus(base), held);
        }
    }

    private static void awaitLeasesReleased(StepBench.Pair pair) throws InterruptedException {
        long deadline = System.nanoTime() + StepBench.DEADLINE.toNanos();
        while (pair.producer.snapshot().liveLeases() > 0) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("P still holds leases after every pull was decided");
            }
            Thread.sleep(10);
        }
    }

    /**
     * Pairs kept open side by side (none closed before the last is measured, so no pair reuses memory
     * another freed): a first one loads what any pair needs, then one with S slots and one with
     * S + extra, each opened and handshaken; the difference of the last two, per extra slot.
     */
    private static void perSlot(NixlTransferEngine engine, int extra) throws Exception {
        int blocks = 256;
        List<StepBench.Pair> open = new ArrayList<>();
        try {
            openPair(engine, blocks, 1024, open);
            Usage small = openPair(engine, blocks, 1024, open);
            Usage large = openPair(engine, blocks, 1024 + extra, open);
            report("lease_slot", large.minus(small), extra);
        } finally {
            open.forEach(StepBench.Pair::close);
        }
    }

    private static Usage openPair(NixlTransferEngine engine, int blocks, int slots, List<StepBench.Pair> open)
            throws Exception {
        Usage before = Usage.settled();
        StepBench.Pair pair = StepBench.Pair.open(engine, 1, "slots" + slots + "-" + open.size(), blocks, blocks, slots);
        open.add(pair);
        pair.once(1); // D's handshake prepares its list of every remote slot
        return Usage.settled().minus(before);
    }

    private static void report(String what, Usage delta, int count) {
        StepBench.line(what + "_heap_per_item", delta.heap / (double) count, "bytes");
        StepBench.line(what + "_resident_per_item", delta.resident / (double) count, "bytes");
    }

    record Usage(long heap, long resident) {

        /**
         * Live heap bytes: the total of {@code jcmd GC.class_histogram} (a full GC, then every live
         * object counted). MemoryMXBean's used heap after System.gc() moved by megabytes between two
         * readings with nothing held changing, with G1 and with the serial collector alike.
         */
        static Usage settled() throws Exception {
            long heap = liveHeapBytes();
            String[] statm = Files.readString(Path.of("/proc/self/statm")).trim().split(" ");
            return new Usage(heap, Long.parseLong(statm[1]) * 4096);
        }

        private static long liveHeapBytes() throws Exception {
            Path out = Files.createTempFile("histogram", ".txt");
            try {
                Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "jcmd").toString(),
                        Long.toString(ProcessHandle.current().pid()), "GC.class_histogram")
                        .redirectErrorStream(true).redirectOutput(out.toFile()).start();
                if (!p.waitFor(60, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                    throw new IllegalStateException("jcmd GC.class_histogram did not finish within 60 s");
                }
                List<String> lines = Files.readAllLines(out);
                String last = lines.isEmpty() ? "" : lines.get(lines.size() - 1).trim();
                String[] total = last.split("\\s+");
                if (p.exitValue() != 0 || !total[0].equals("Total")) {
                    throw new IllegalStateException("jcmd GC.class_histogram failed: " + String.join("\n", lines));
                }
                return Long.parseLong(total[2]);
            } finally {
                Files.deleteIfExists(out);
            }
        }

        Usage minus(Usage o) {
            return new Usage(heap - o.heap, resident - o.resident);
        }
    }
}
