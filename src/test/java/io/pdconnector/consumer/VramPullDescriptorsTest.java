package io.pdconnector.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.config.ProducerConfig;
import io.pdconnector.producer.LeaseObserver;
import io.pdconnector.producer.LeaseScheduler;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import io.pdconnector.testing.DeviceMemoryEngine;
import io.pdconnector.testing.InProcessDirectory;
import io.pdconnector.testing.ManualClock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * D's READ lists under pd.kv.memory=vram: the lists over P's KV are VRAM ones on the device P published
 * in its handshake, the lists over D's own KV VRAM ones on D's pool's device, and the lease-slot lists
 * stay host memory. (Loopback cannot move VRAM, so the READ itself fails here: what is proven is what
 * D asks NIXL for; real NIXL's refusal of a VRAM list over host memory is NixlVramRegistrationTest's.)
 */
class VramPullDescriptorsTest {

    private final DeviceMemoryEngine engine = new DeviceMemoryEngine();
    private final InProcessDirectory registry = new InProcessDirectory();
    private final ManualClock clock = new ManualClock();
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

    private <T> void stepUntil(CompletableFuture<T> f) {
        for (int i = 0; i < 1000 && !f.isDone(); i++) {
            p.doWork();
            d.doWork();
        }
        assertTrue(f.isDone(), "no answer");
    }

    @Test
    void peerKvListsAreVramOnPsDeviceOwnOnDsDeviceAndSlotsStayHost() throws Exception {
        Path state = Files.createTempDirectory("pd-state");
        p = new ProducerFixture(new LeaseScheduler(ProducerConfig.builder("p", state).geometry(Cluster.SMALL)
                .blocks(16, 4, 0).build(),
                engine, registry, clock, LeaseObserver.NONE, Optional.of(engine.pools(3))));
        p.open();
        d = new ConsumerFixture(new PullScheduler(
                ConsumerConfig.builder("d").geometry(Cluster.SMALL).blocks(16).build(), engine, registry, clock,
                PullObserver.NONE, Optional.of(engine.pools(5))));
        d.open();
        CompletableFuture<?> reserve = p.facade().submitReserve("a", 10);
        stepUntil(reserve);
        reserve.join();
        CompletableFuture<KvTransferParams> finish = p.facade().submitFinish("a");
        stepUntil(finish);

        CompletableFuture<PullOutcome> pull = d.submitPull("a", Cluster.prompt(1, 10), finish.join());
        stepUntil(pull);

        assertTrue(pull.isCompletedExceptionally() || pull.join().state() != PullState.RECEIVED,
                "loopback cannot READ VRAM: the pull must not pretend it did");
        List<String> kvLists = engine.prepared.stream().filter(s -> s.contains("VRAM")).distinct().toList();
        assertEquals(List.of("d-d0 prepareRemote VRAM 3", "d-d0 prepareLocal VRAM 5"), kvLists,
                "P's KV on the device P's handshake names, D's own on D's pool's device");
        assertTrue(engine.prepared.contains("d-d0 prepareRemote DRAM 0"), "P's lease slots stay host memory: "
                + engine.prepared);
    }
}
