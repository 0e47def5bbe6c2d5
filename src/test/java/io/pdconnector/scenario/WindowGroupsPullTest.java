package io.pdconnector.scenario;

import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.consumer.ConsumerFixture;
import io.pdconnector.consumer.PullState;
import io.pdconnector.kv.KvAttention;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.reference.ReferenceEngine;
import io.pdconnector.testing.Cluster;
import java.util.Arrays;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A sliding-window model's pull reads what the engine keeps: a window group's layers of the request's last blocks
 * (its window's reach), the full group's layers of every block, whatever the TP sizes. The older blocks' window
 * layers, which the engine dropped and P's plugin left stale, do not cross the wire: D's copies of them keep what
 * D's blocks held before.
 */
class WindowGroupsPullTest {

    /**
     * Gemma's shape, small: a 4-token window over one layer beside one full layer, 4-token blocks; in a block the
     * full layer lies first. The window reaches ceil(4 / 4) + 1 = 2 blocks.
     */
    private static final ModelGeometry SLIDING = new ModelGeometry(2, 2, 8, 4, 2, null, KvAttention.MHA,
            "window:4/1,full/1");
    private static final int WINDOW_BLOCKS = 2;

    private final Cluster cluster = new Cluster();
    private final int[] prompt = prompt(3, 18); // 5 blocks, the last one partial

    @AfterEach
    void close() {
        cluster.close();
    }

    @ParameterizedTest(name = "P TP {0}, D TP {1}")
    @CsvSource({"1, 1", "1, 2", "2, 1"})
    void theOlderBlocksCrossWithoutTheirWindowLayers(int prefillTp, int decodeTp) {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").geometry(SLIDING).tpSize(prefillTp));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d").geometry(SLIDING).tpSize(decodeTp));
        KvTransferParams a = cluster.prefill(p, "a", prompt);

        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", prompt, a).state());

        byte[] held = cluster.await(d.submitReadKv("a"));
        ReferenceEngine reference = new ReferenceEngine(SLIDING);
        int rankBlock = Math.toIntExact(SLIDING.blockBytes(decodeTp));
        int fullLayer = Math.toIntExact(SLIDING.layerBytes(1, decodeTp));
        int blocks = SLIDING.blocksFor(prompt.length);
        assertEquals((long) blocks * decodeTp * rankBlock, held.length);
        for (int b = 0; b < blocks; b++) {
            for (int r = 0; r < decodeTp; r++) {
                int at = (b * decodeTp + r) * rankBlock;
                byte[] expected = reference.expectedBlock(prompt, b, decodeTp, r);
                byte[] got = Arrays.copyOfRange(held, at, at + rankBlock);
                assertArrayEquals(Arrays.copyOfRange(expected, 0, fullLayer), Arrays.copyOfRange(got, 0, fullLayer),
                        "block " + b + " rank " + r + ": the full layer of every block crosses");
                boolean inWindow = b >= blocks - WINDOW_BLOCKS;
                assertEquals(inWindow, Arrays.equals(Arrays.copyOfRange(expected, fullLayer, rankBlock),
                        Arrays.copyOfRange(got, fullLayer, rankBlock)),
                        "block " + b + " rank " + r + ": the window layer crosses for the window's blocks only");
            }
        }
        cluster.steps(2);
        assertNull(p.lease("a"), "P's lease released after its readers read");
        cluster.release(d, "a");
        cluster.assertNoLeak();
    }

    @Test
    void aModelOfOneGroupStillReadsWholeBlocks() {
        ModelGeometry one = new ModelGeometry(2, 2, 8, 4, 2);
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").geometry(one));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d").geometry(one));
        KvTransferParams a = cluster.prefill(p, "a", prompt);

        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", prompt, a).state());

        assertTrue(cluster.matches(d, "a"), "every byte of every block crosses");
        cluster.release(d, "a");
        cluster.assertNoLeak();
    }
}
