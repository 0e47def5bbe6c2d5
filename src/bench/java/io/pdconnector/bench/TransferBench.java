package io.pdconnector.bench;

import io.pdconnector.it.PeerProcess;
import io.pdconnector.nixl.NixlDefaults;
import io.pdconnector.nixl.NixlHome;
import io.pdconnector.nixl.NixlTransferEngine;
import io.pdconnector.nixl.UcxThreads;
import io.pdconnector.testing.SeededBytes;
import io.pdconnector.transfer.DescriptorList;
import io.pdconnector.transfer.PreparedDescriptors;
import io.pdconnector.transfer.ReadRequest;
import io.pdconnector.transfer.RegisteredRegion;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferStatus;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;

/**
 * Block-READ bandwidth between two processes over real NIXL against a memcpy of the same bytes with
 * the same descriptor pattern, measured in the same run. Prints one figure a line: {@code name value unit}.
 * Bandwidth is in GB/s (10^9 bytes), as nixlbench reports it.
 */
public final class TransferBench {

    private static final long MIB = 1L << 20;
    private static final long SOURCE_BYTES = 256 * MIB;
    private static final long READ_BYTES = 64 * MIB;
    private static final long[] SIZES = {4 * 1024, 16 * 1024, 64 * 1024, MIB};

    private TransferBench() {
    }

    public static void main(String[] args) throws Exception {
        int iterations = args.length > 0 ? Integer.parseInt(args[0]) : 7;
        long progressDelayUs = Long.getLong("pd.nixl.progress-delay-us", NixlDefaults.PROGRESS_DELAY_US);
        UcxThreads ucx = new UcxThreads(Integer.getInteger("pd.nixl.ucx-threads", 0),
                Integer.getInteger("pd.nixl.ucx-split-batch", 0));
        NixlTransferEngine engine = NixlTransferEngine.open(NixlHome.at(Path.of(System.getProperty("pd.nixl.home"))),
                true, progressDelayUs, ucx);
        TransferAgent d = engine.createAgent("bench-d-" + ProcessHandle.current().pid());
        RegisteredRegion dst = d.allocate("dst", READ_BYTES);
        try (PeerProcess p = new PeerProcess("bench-p-" + ProcessHandle.current().pid(), SOURCE_BYTES, 8);
                Arena arena = Arena.ofConfined()) {
            p.command("FILL 1");
            MemorySegment localSource = arena.allocate(SOURCE_BYTES, 4096);
            SeededBytes.fill(localSource, 1);
            String remote = d.loadRemoteMetadata(p.metadata);
            System.out.println("# machine: " + Runtime.getRuntime().availableProcessors() + " cores; source "
                    + SOURCE_BYTES / MIB + " MiB in another process, " + READ_BYTES / MIB + " MiB per READ, median of "
                    + iterations + " runs after 2 warm-ups; NIXL progress-thread delay " + progressDelayUs + " us; "
                    + ucx.threads() + " UCX backend threads on the reading side, split batch " + ucx.splitBatch());
            for (long size : SIZES) {
                benchSize(d, remote, p, dst, localSource, size, iterations);
            }
            p.exit();
        }
        d.deregister(dst);
        d.close();
    }

    private static void benchSize(TransferAgent d, String remote, PeerProcess p, RegisteredRegion dst,
            MemorySegment localSource, long size, int iterations) {
        int count = (int) (READ_BYTES / size);
        long[] sourceOffsets = scatteredOffsets(size, count);
        DescriptorList remoteList = new DescriptorList(count);
        for (long off : sourceOffsets) {
            remoteList.add(p.kvAddress + off, size);
        }
        long t0 = System.nanoTime();
        PreparedDescriptors l = d.prepareLocal(DescriptorList.contiguous(dst.address(), size, count));
        PreparedDescriptors r = d.prepareRemote(remote, remoteList);
        double prepareUs = (System.nanoTime() - t0) / 1e3;
        int[] idx = IntStream.range(0, count).toArray();

        long[] readNs = new long[iterations];
        long[] postNs = new long[iterations];
        for (int i = -2; i < iterations; i++) {
            long start = System.nanoTime();
            ReadRequest read = d.postRead(l, idx, r, idx, null);
            long posted = System.nanoTime();
            while (d.status(read) != TransferStatus.DONE) {
                if (System.nanoTime() - start > 60_000_000_000L) {
                    throw new IllegalStateException("READ of " + size + " B descriptors took over 60 s");
                }
            }
            long done = System.nanoTime();
            d.release(read);
            if (i >= 0) {
                readNs[i] = done - start;
                postNs[i] = posted - start;
            }
        }
        verify(dst.segment(), sourceOffsets, size);
        long[] copyNs = new long[iterations];
        for (int i = -2; i < iterations; i++) {
            long start = System.nanoTime();
            for (int k = 0; k < count; k++) {
                MemorySegment.copy(localSource, sourceOffsets[k], dst.segment(), k * size, size);
            }
            if (i >= 0) {
                copyNs[i] = System.nanoTime() - start;
            }
        }
        d.release(r);
        d.release(l);
        report(label(size), readNs, postNs, copyNs, prepareUs, count);
    }

    private static long[] scatteredOffsets(long size, int count) {
        List<Long> all = new ArrayList<>();
        for (long off = 0; off + size <= SOURCE_BYTES; off += size) {
            all.add(off);
        }
        Collections.shuffle(all, new Random(size));
        return all.subList(0, count).stream().mapToLong(Long::longValue).toArray();
    }

    private static void verify(MemorySegment dst, long[] sourceOffsets, long size) {
        for (int k = 0; k < sourceOffsets.length; k++) {
            if (SeededBytes.firstMismatch(dst, k * size, size, 1, sourceOffsets[k]) != -1) {
                throw new IllegalStateException("descriptor " + k + " read wrong bytes");
            }
        }
    }

    private static void report(String size, long[] readNs, long[] postNs, long[] copyNs, double prepareUs, int count) {
        double readGbs = READ_BYTES / (double) median(readNs);
        double copyGbs = READ_BYTES / (double) median(copyNs);
        line("read_bandwidth_" + size, readGbs, "GB/s");
        line("memcpy_bandwidth_" + size, copyGbs, "GB/s");
        line("read_vs_memcpy_" + size, readGbs / copyGbs, "ratio");
        line("read_latency_p50_" + size, median(readNs) / 1e3, "us");
        line("read_latency_max_" + size, Arrays.stream(readNs).max().orElseThrow() / 1e3, "us");
        line("post_time_p50_" + size, median(postNs) / 1e3, "us");
        line("prepare_time_" + size, prepareUs, "us");
        line("descriptors_" + size, count, "count");
    }

    private static long median(long[] values) {
        long[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    private static void line(String name, double value, String unit) {
        System.out.printf("%s %.3f %s%n", name, value, unit);
    }

    private static String label(long size) {
        return size >= MIB ? size / MIB + "MiB" : size / 1024 + "KiB";
    }
}
