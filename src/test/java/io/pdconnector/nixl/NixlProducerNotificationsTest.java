package io.pdconnector.nixl;

import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Issue 12 on real NIXL: a notification over the drain buffer reaching P's loop is dropped and counted. */
class NixlProducerNotificationsTest {

    private static final long DEADLINE_NS = 20_000_000_000L;

    private final Cluster cluster = new Cluster(NixlTransferEngine.open(
            NixlHome.at(Path.of(System.getProperty("pd.nixl.home"))), true, NixlDefaults.PROGRESS_DELAY_US));

    @AfterEach
    void close() {
        cluster.close();
    }

    @Test
    void aNotificationOverTheDrainBufferNeitherStopsPNorHidesTheReadBehindIt() {
        String engineId = "nixl-p-drop-" + System.nanoTime();
        ProducerFixture p = cluster.producer(cluster.producerConfig(engineId));
        KvTransferParams a = cluster.prefill(p, "a", prompt(1, 10));
        HandshakeMetadata rank0 = cluster.registry.lookup(engineId).orElseThrow().ranks().getFirst();

        try (RawNixlPeer foreign = new RawNixlPeer(HelperBindings.load(NixlHome.at(Path.of(
                System.getProperty("pd.nixl.home")))), "foreign-" + System.nanoTime(), rank0.agentMetadata())) {
            foreign.send("x".repeat(100 * 1024).getBytes(StandardCharsets.UTF_8));
            foreign.send(("a:1:" + a.remoteLeaseNonce()).getBytes(StandardCharsets.UTF_8));
            long deadline = System.nanoTime() + DEADLINE_NS;
            while ((p.counters().leasesReleasedByReaders.get() == 0 || p.counters().droppedNotifications.get() == 0)
                    && System.nanoTime() < deadline) {
                assertDoesNotThrow(p::doWork);
            }
        }

        assertEquals(1, p.counters().droppedNotifications.get(), "the oversized notification was dropped and counted");
        assertEquals(1, p.counters().leasesReleasedByReaders.get(), "the read notification behind it released a");
        cluster.steps(2);
        cluster.assertNoLeak();
    }
}
