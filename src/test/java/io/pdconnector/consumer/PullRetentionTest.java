package io.pdconnector.consumer;

import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.pdconnector.config.LoadFailurePolicy;
import io.pdconnector.error.UnknownRequestException;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 12, hole 4: a decided pull whose KV nobody reads or releases (a router that died between
 * pull and GET kv) gives its blocks back after {@code pd.consumer.retention} (default 60 s), so D's
 * pool is not exhausted for good and the request id can be pulled again.
 */
class PullRetentionTest {

    private static final Duration RETENTION = Duration.ofSeconds(60);
    private final Cluster cluster = new Cluster();
    private final int[] promptA = prompt(1, 10);

    @AfterEach
    void close() {
        cluster.close();
    }

    @Test
    void aReceivedPullNobodyReadsIsReleasedAfterTheRetentionAndItsIdCanBePulledAgain() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", promptA, a).state());
        int total = d.snapshot().totalBlocks();

        cluster.clock.advance(RETENTION.minusSeconds(1));
        cluster.step();
        assertEquals(total - 3, d.snapshot().freeBlocks(), "held until the retention runs out");

        cluster.clock.advance(Duration.ofSeconds(1));
        cluster.step();

        assertEquals(total, d.snapshot().freeBlocks(), "the blocks came back");
        assertEquals(1, d.counters().expiredUnread.get());
        assertThrows(UnknownRequestException.class, () -> cluster.await(d.submitReadKv("a")));
        KvTransferParams again = cluster.prefill(p, "a", promptA);
        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", promptA, again).state(),
                "a later pull with the same id is accepted");
        cluster.release(d, "a");
        cluster.assertNoLeak();
    }

    @Test
    void aRecomputedPullNobodyReadsIsReleasedAfterTheRetention() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d", true, LoadFailurePolicy.RECOMPUTE));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.await(p.facade().submitAbort("a")); // P zeroes the slot: the lease check fails, D recomputes
        cluster.steps(2);
        assertEquals(PullState.RECOMPUTED, cluster.pull(d, "a", promptA, a).state());

        cluster.clock.advance(RETENTION);
        cluster.step();

        assertEquals(d.snapshot().totalBlocks(), d.snapshot().freeBlocks(), "the blocks came back");
        assertEquals(1, d.counters().expiredUnread.get());
        cluster.assertNoLeak();
    }
}
