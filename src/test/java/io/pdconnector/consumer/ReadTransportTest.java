package io.pdconnector.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.config.ProducerConfig;
import io.pdconnector.error.IncompatiblePeerException;
import io.pdconnector.producer.LeaseObserver;
import io.pdconnector.producer.LeaseScheduler;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import io.pdconnector.testing.DeviceMemoryEngine;
import io.pdconnector.testing.InProcessDirectory;
import io.pdconnector.testing.ManualClock;
import io.pdconnector.transfer.ReadPath;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * D learns from the transfer library's report which transport its READs of a producer's GPU memory take, reports
 * it, and refuses a host path unless pd.kv.vram-host-path=allow: P and D with fake GPU pools, whose READs the
 * library "reports" as UCX would print them.
 */
class ReadTransportTest {

    private final DeviceMemoryEngine engine = new DeviceMemoryEngine();
    private final InProcessDirectory registry = new InProcessDirectory();
    private final ManualClock clock = new ManualClock();
    private final List<String> reported = Collections.synchronizedList(new ArrayList<>());
    private final PullObserver observer = new PullObserver() {
        @Override
        public void readTransport(String peer, int decodeRank, int prefillRank, String kvMemory, String transport) {
            reported.add(peer + " d" + decodeRank + " p" + prefillRank + " " + kvMemory + " " + transport);
        }
    };
    private ProducerFixture p;
    private ConsumerFixture d;

    @AfterEach
    void close() {
        if (d != null) {
            d.close();
        }
        if (p != null) {
            p.close();
        }
        assertEquals(0, engine.registeredRegions(), "every pool deregistered");
    }

    private static ReadPath path(String reach, String protocol, String... lanes) {
        return new ReadPath("d-d0", reach, "cuda", "cuda",
                List.of(new ReadPath.Route(0, Long.MAX_VALUE, protocol, List.of(lanes))));
    }

    private void fleet(boolean allowHostPath) throws Exception {
        fleet(allowHostPath, true);
    }

    private void fleet(boolean allowHostPath, boolean producerInGpuMemory) throws Exception {
        engine.vramReadsComplete = true;
        p = new ProducerFixture(new LeaseScheduler(ProducerConfig.builder("p", Files.createTempDirectory("pd-state"))
                .geometry(Cluster.SMALL).blocks(16, 4, 0).build(),
                engine, registry, clock, LeaseObserver.NONE,
                producerInGpuMemory ? Optional.of(engine.pools(0)) : Optional.empty()));
        p.open();
        d = new ConsumerFixture(new PullScheduler(ConsumerConfig.builder("d").geometry(Cluster.SMALL).blocks(16)
                .vramHostPathAllowed(allowHostPath).build(), engine, registry, clock, observer,
                Optional.of(engine.pools(0))));
        d.open();
    }

    private CompletableFuture<PullOutcome> pull(String id) {
        CompletableFuture<?> reserve = p.facade().submitReserve(id, 10);
        stepUntil(reserve);
        reserve.join();
        CompletableFuture<KvTransferParams> finish = p.facade().submitFinish(id);
        stepUntil(finish);
        CompletableFuture<PullOutcome> pull = d.submitPull(id, Cluster.prompt(1, 10), finish.join());
        stepUntil(pull);
        return pull;
    }

    private <T> void stepUntil(CompletableFuture<T> f) {
        for (int i = 0; i < 1000 && !f.isDone(); i++) {
            p.doWork();
            d.doWork();
        }
        assertTrue(f.isDone(), "no answer");
    }

    @Test
    void aGpuTransportIsReportedAndServed() throws Exception {
        fleet(false);
        engine.nextReadPaths.put("d-d0", List.of(path("intra-node", "zero-copy", "cuda_ipc/cuda")));

        assertEquals(PullState.RECEIVED, pull("a").join().state());
        assertEquals(PullState.RECEIVED, pull("b").join().state(), "the second pull reports nothing new");
        assertEquals(List.of("p d0 p0 cuda cuda_ipc"), reported, "reported once, when first known");
    }

    @Test
    void aHostPathForGpuMemoryDeclinesThePullAndRefusesThePeerNamingTheCause() throws Exception {
        fleet(false);
        engine.nextReadPaths.put("d-d0", List.of(path("intra-node", "get via am", "tcp/lo")));

        PullOutcome first = pull("a").join();
        assertEquals(PullState.DECLINED, first.state());
        assertEquals(DeclineReason.TRANSFER_FAILED, first.reason(), "the READ that revealed the path is not used");
        assertEquals(List.of("p d0 p0 cuda tcp"), reported, "what it took is reported all the same");

        CompletionException later = org.junit.jupiter.api.Assertions.assertThrows(CompletionException.class,
                () -> pull("b").join());
        IncompatiblePeerException refused = (IncompatiblePeerException) later.getCause();
        assertEquals("vram-host-path", refused.reason());
        String why = refused.getMessage();
        assertTrue(why.startsWith("producer p rank 0's KV is in GPU memory, and UCX reads it into decode rank 0"
                + " over a host path, tcp (intra-node"), why);
        assertTrue(why.contains("get via am tcp/lo for 0..inf B"), why);
        assertTrue(why.contains("one PID namespace"), why);
        assertTrue(why.contains("UCX_CUDA_IPC_ENABLE_GET_ZCOPY="), why);
        assertTrue(why.contains("pd.kv.vram-host-path=allow"), why);
        assertEquals(0, d.snapshot().pulls(), "the refused pull holds nothing");
        assertEquals(d.snapshot().totalBlocks(), d.snapshot().freeBlocks(), "nor any block");
    }

    @Test
    void aHostPathAcrossNodesNamesRdma() throws Exception {
        fleet(false);
        engine.nextReadPaths.put("d-d0", List.of(path("inter-node", "zero-copy", "tcp/eth0")));

        assertEquals(DeclineReason.TRANSFER_FAILED, pull("a").join().reason());
        CompletionException later = org.junit.jupiter.api.Assertions.assertThrows(CompletionException.class,
                () -> pull("b").join());
        assertTrue(later.getCause().getMessage().contains("P is on another node, and UCX found no RDMA device"),
                later.getCause().getMessage());
    }

    @Test
    void allowedAHostPathIsServedAndStillReported() throws Exception {
        fleet(true);
        engine.nextReadPaths.put("d-d0", List.of(path("intra-node", "zero-copy", "cuda_copy/cuda", "tcp/lo")));

        assertEquals(PullState.RECEIVED, pull("a").join().state());
        assertEquals(PullState.RECEIVED, pull("b").join().state());
        assertEquals(List.of("p d0 p0 cuda cuda_copy+tcp"), reported);
    }

    @Test
    void rdmaIsAGpuTransportAndARouteBelowTheSmallestReadIsNotCounted() throws Exception {
        fleet(false);
        ReadPath rdma = new ReadPath("d-d0", "inter-node", "cuda", "cuda", List.of(
                new ReadPath.Route(0, 8, "get via am", List.of("tcp/eth0")),
                new ReadPath.Route(9, Long.MAX_VALUE, "zero-copy", List.of("rc_mlx5/mlx5_0:1"))));
        engine.nextReadPaths.put("d-d0", List.of(rdma));

        assertEquals(PullState.RECEIVED, pull("a").join().state());
        assertEquals(List.of("p d0 p0 cuda rc_mlx5"), reported);
    }

    @Test
    void aProducersHostMemoryReadIntoGpuMemoryIsReportedNotRefused() throws Exception {
        fleet(false, false);
        engine.nextReadPaths.put("d-d0", List.of(new ReadPath("d-d0", "inter-node", "cuda", "host",
                List.of(new ReadPath.Route(0, Long.MAX_VALUE, "zero-copy", List.of("tcp/eth0"))))));

        assertEquals(PullState.RECEIVED, pull("a").join().state(), "P's KV starts on the host: no GPU path to miss");
        assertEquals(PullState.RECEIVED, pull("b").join().state());
        assertEquals(List.of("p d0 p0 host tcp"), reported);
    }

    @Test
    void aPathOfOtherMemoryKindsIsNotThisChannels() throws Exception {
        fleet(false);
        engine.nextReadPaths.put("d-d0", List.of(new ReadPath("d-d0", "intra-node", "host", "host",
                List.of(new ReadPath.Route(0, Long.MAX_VALUE, "zero-copy", List.of("tcp/lo"))))));

        assertEquals(PullState.RECEIVED, pull("a").join().state(), "a host READ's path says nothing of VRAM's");
        assertEquals(List.of(), reported, "nothing known of this channel yet");
        assertNotNull(d);
    }
}
