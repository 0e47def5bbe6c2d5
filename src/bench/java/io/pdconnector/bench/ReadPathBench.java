package io.pdconnector.bench;

import io.pdconnector.nixl.NixlDefaults;
import io.pdconnector.nixl.NixlHome;
import io.pdconnector.nixl.NixlTransferEngine;
import io.pdconnector.transfer.DescriptorList;
import io.pdconnector.transfer.PreparedDescriptors;
import io.pdconnector.transfer.ReadRequest;
import io.pdconnector.transfer.RegisteredRegion;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferStatus;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.IntStream;

/**
 * What asking UCX's protocol report after every block READ costs D's step loop (consumer.ReadTransports): a
 * {@link TransferAgent#readPaths} call with nothing new, against the post of the READ it follows (16 descriptors
 * of 64 KiB, real NIXL, two agents of this process), both timed in the same run. Prints {@code name value unit}.
 */
public final class ReadPathBench {

    private static final int DESCRIPTORS = 16;
    private static final long SIZE = 64 * 1024;

    private ReadPathBench() {
    }

    public static void main(String[] args) {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        NixlTransferEngine engine = NixlTransferEngine.open(NixlHome.at(Path.of(System.getProperty("pd.nixl.home"))),
                true, NixlDefaults.PROGRESS_DELAY_US);
        TransferAgent p = engine.createAgent("bench-rp-p-" + ProcessHandle.current().pid());
        TransferAgent d = engine.createAgent("bench-rp-d-" + ProcessHandle.current().pid());
        RegisteredRegion src = p.allocate("src", DESCRIPTORS * SIZE);
        RegisteredRegion dst = d.allocate("dst", DESCRIPTORS * SIZE);
        String remote = d.loadRemoteMetadata(p.localMetadata());
        PreparedDescriptors l = d.prepareLocal(DescriptorList.contiguous(dst.address(), SIZE, DESCRIPTORS));
        PreparedDescriptors r = d.prepareRemote(remote, DescriptorList.contiguous(src.address(), SIZE, DESCRIPTORS));
        int[] idx = IntStream.range(0, DESCRIPTORS).toArray();
        double[] drainNs = new double[rounds];
        double[] postNs = new double[rounds];
        for (int round = -1; round < rounds; round++) { // round -1 warms up
            int posts = 2000;
            long posting = 0;
            for (int i = 0; i < posts; i++) {
                long t0 = System.nanoTime();
                ReadRequest read = d.postRead(l, idx, r, idx, null);
                posting += System.nanoTime() - t0;
                long deadline = System.nanoTime() + 10_000_000_000L;
                while (d.status(read) == TransferStatus.IN_PROGRESS) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("a READ did not finish within 10 s");
                    }
                }
                d.release(read);
            }
            d.readPaths(); // what the first post printed
            int drains = 200_000;
            long t0 = System.nanoTime();
            for (int i = 0; i < drains; i++) {
                d.readPaths();
            }
            if (round >= 0) {
                drainNs[round] = (System.nanoTime() - t0) / (double) drains;
                postNs[round] = posting / (double) posts;
            }
        }
        Arrays.sort(drainNs);
        Arrays.sort(postNs);
        double drain = drainNs[rounds / 2];
        double post = postNs[rounds / 2];
        System.out.println("# machine: " + Runtime.getRuntime().availableProcessors() + " cores; median of " + rounds
                + " rounds: 2000 posts of " + DESCRIPTORS + " x " + SIZE / 1024 + " KiB, 200000 report reads");
        System.out.printf("read_path_report_ns %.0f ns%n", drain);
        System.out.printf("post_ns %.0f ns%n", post);
        System.out.printf("report_per_post %.4f ratio%n", drain / post);
        d.release(l);
        d.release(r);
        d.deregister(dst);
        p.deregister(src);
        d.close();
        p.close();
    }
}
