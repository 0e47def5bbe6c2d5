package io.pdconnector.scenario;

import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.consumer.ConsumerFixture;
import io.pdconnector.consumer.PullState;
import io.pdconnector.error.PeerFailureException;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A producer D cannot load (NIXL refuses its metadata: the peer is unreachable, frozen, or its agent
 * gone) fails the pull that needed the handshake as a peer failure, 502 peer-unreachable with the
 * producer named, never as the service's own internal error; nothing is held, and the next pull
 * handshakes again.
 */
class PeerHandshakeFailureTest {

    private final Cluster cluster = new Cluster();

    @AfterEach
    void close() {
        cluster.close();
    }

    @Test
    void aHandshakeTheTransferLayerRefusesFailsThePullAsAPeerFailure_andTheNextPullHandshakesAgain() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));
        int[] tokens = prompt(1, 10);
        KvTransferParams params = cluster.prefill(p, "a", tokens);
        cluster.engine.refuseRemoteLoads = true;

        PeerFailureException e = assertThrows(PeerFailureException.class, () -> cluster.pull(d, "a", tokens, params));
        assertTrue(e.getMessage().contains("p"), e.getMessage());
        assertEquals("peer-unreachable", e.reason());

        cluster.engine.refuseRemoteLoads = false;
        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", tokens, params).state());
        cluster.release(d, "a");
        cluster.assertNoLeak();
    }
}
