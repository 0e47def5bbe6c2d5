package io.pdconnector.scenario;

import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.consumer.ConsumerFixture;
import io.pdconnector.consumer.KvRegion;
import io.pdconnector.consumer.PullOutcome;
import io.pdconnector.consumer.PullState;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import io.pdconnector.transfer.TransferException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 23: D keeps its received KV in a shared file per rank, as P does, so an engine beside D reads a
 * pull's blocks in place instead of over HTTP. The files are created and zeroed at start, locked while D
 * maps them, unlinked at stop; a pull says where its blocks are, and they stay D's until it is released.
 */
class DecoderKvFileTest {

    @TempDir
    Path shm;
    private final Cluster cluster = new Cluster();

    @AfterEach
    void close() {
        cluster.close();
    }

    private ConsumerConfig.Builder decoderConfig(int tp) {
        return cluster.consumerConfig("d").tpSize(tp).kvShmDir(shm);
    }

    private long rankBlockBytes(ConsumerFixture d) {
        return d.config().geometry().blockBytes(d.config().tpSize());
    }

    /** What an engine beside D does: each rank's slice of each pulled block, read from the rank's file. */
    private static byte[] readThroughFiles(PullOutcome o, long rankBlockBytes) throws IOException {
        List<KvRegion> regions = o.kv().regions();
        int[] blocks = o.localBlockIds();
        byte[] out = new byte[Math.toIntExact(blocks.length * regions.size() * rankBlockBytes)];
        for (KvRegion region : regions) {
            try (FileChannel channel = FileChannel.open(region.file().orElseThrow())) {
                for (int i = 0; i < blocks.length; i++) {
                    ByteBuffer slice = ByteBuffer.wrap(out, Math.toIntExact((i * regions.size() + region.rank())
                            * rankBlockBytes), Math.toIntExact(rankBlockBytes));
                    channel.read(slice, blocks[i] * rankBlockBytes);
                }
            }
        }
        return out;
    }

    @Test
    void eachRankHasAZeroedLockedFileThatHoldsThePulledBlocksAndIsUnlinkedAtStop() throws IOException {
        Path stale = shm.resolve("pd-d-d0.kv");
        byte[] garbage = new byte[4096];
        new Random(5).nextBytes(garbage);
        Files.write(stale, garbage); // what a crashed D left behind: the new one starts from zero
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").tpSize(2));
        ConsumerFixture d = cluster.consumer(decoderConfig(2));
        long region = 16 * rankBlockBytes(d);
        for (int rank = 0; rank < 2; rank++) {
            Path file = shm.resolve("pd-d-d" + rank + ".kv");
            assertEquals(region + 16 * Long.BYTES, Files.size(file), "every block of rank " + rank
                    + ", then its epoch table");
            byte[] bytes = Files.readAllBytes(file);
            assertTrue(allZero(bytes), "zeroed at start: rank " + rank);
        }
        try (Cluster other = new Cluster()) { // another process: its own engine, the same host and directory
            assertThrows(TransferException.class, () -> other.consumer(decoderConfig(2)),
                    "a second D with the same engine id is refused");
        }
        assertEquals(region + 16 * Long.BYTES, Files.size(stale), "and did not truncate the live file");

        int[] tokens = prompt(3, 10);
        KvTransferParams params = cluster.prefill(p, "f", tokens);
        PullOutcome o = cluster.pull(d, "f", tokens, params);

        assertEquals(PullState.RECEIVED, o.state());
        assertEquals(List.of(new KvRegion(0, java.util.Optional.of(shm.resolve("pd-d-d0.kv")), region),
                new KvRegion(1, java.util.Optional.of(shm.resolve("pd-d-d1.kv")), region)), o.kv().regions());
        assertEquals(rankBlockBytes(d), o.kv().rankBlockBytes());
        byte[] inFiles = readThroughFiles(o, rankBlockBytes(d));
        assertFalse(allZero(inFiles));
        assertArrayEquals(cluster.await(d.submitReadKv("f")), inFiles, "the file holds what GET .../kv returns");
        assertTrue(cluster.matches(d, "f"), "the reference engine's KV of the prompt");
        cluster.release(d, "f");
        cluster.assertNoLeak();

        d.close();
        assertFalse(Files.exists(shm.resolve("pd-d-d0.kv")), "unlinked at stop");
        assertFalse(Files.exists(shm.resolve("pd-d-d1.kv")), "unlinked at stop");
    }

    @Test
    void aPullsBlocksAreNotReusedUntilItIsReleasedAndAreFreeAgainAfterwards() throws IOException {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").blocks(32, 4, 0));
        ConsumerFixture d = cluster.consumer(decoderConfig(1).blocks(6));
        int[] a = prompt(1, 12);
        int[] b = prompt(2, 12);
        PullOutcome first = cluster.pull(d, "a", a, cluster.prefill(p, "a", a));
        byte[] held = readThroughFiles(first, rankBlockBytes(d));
        PullOutcome second = cluster.pull(d, "b", b, cluster.prefill(p, "b", b));
        assertEquals(PullState.RECEIVED, second.state());
        assertEquals(0, d.snapshot().freeBlocks(), "3 + 3 of 6 blocks held");
        assertTrue(Arrays.stream(second.localBlockIds()).noneMatch(x -> Arrays.stream(first.localBlockIds())
                .anyMatch(y -> x == y)), "a held pull's blocks go to no other pull");
        int[] c = prompt(3, 12);
        KvTransferParams cParams = cluster.prefill(p, "c", c);
        var third = d.submitPull("c", c, cParams);
        cluster.steps(5);
        assertFalse(third.isDone(), "a third pull waits for blocks");
        assertArrayEquals(held, readThroughFiles(first, rankBlockBytes(d)), "a's blocks unchanged while held");

        cluster.release(d, "a");
        PullOutcome reused = cluster.await(third);

        assertEquals(PullState.RECEIVED, reused.state());
        assertEquals(Arrays.stream(first.localBlockIds()).sorted().boxed().toList(),
                Arrays.stream(reused.localBlockIds()).sorted().boxed().toList(), "a's released blocks were free again");
        assertTrue(cluster.matches(d, "c"));
        cluster.release(d, "b");
        cluster.release(d, "c");
        cluster.assertNoLeak();
    }

    /** What the plugin checks after its copy: the epoch of each of {@code blocks} in a rank's table. */
    private static long[] epochs(PullOutcome o, int rank, int[] blocks) throws IOException {
        KvRegion region = o.kv().regions().get(rank);
        long[] out = new long[blocks.length];
        try (FileChannel channel = FileChannel.open(region.file().orElseThrow())) {
            for (int i = 0; i < blocks.length; i++) {
                ByteBuffer word = ByteBuffer.allocate(Long.BYTES).order(ByteOrder.LITTLE_ENDIAN);
                channel.read(word, region.regionBytes() + (long) blocks[i] * Long.BYTES);
                out[i] = word.flip().getLong();
            }
        }
        return out;
    }

    @Test
    void aPullsBlocksKeepItsEpochInEveryRanksTableUntilALaterPullGetsThem() throws IOException {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").tpSize(2).blocks(32, 4, 0));
        ConsumerFixture d = cluster.consumer(decoderConfig(2).blocks(3));
        int[] a = prompt(1, 12);
        PullOutcome first = cluster.pull(d, "a", a, cluster.prefill(p, "a", a));
        long epoch = first.kv().blocksEpoch();
        assertTrue(epoch != 0, "a pull into D's KV files names its blocks' epoch");
        int[] blocks = first.localBlockIds();
        for (int rank = 0; rank < 2; rank++) {
            long[] expected = new long[blocks.length];
            Arrays.fill(expected, epoch);
            assertArrayEquals(expected, epochs(first, rank, blocks), "rank " + rank + "'s table, while a holds them");
        }

        cluster.release(d, "a");
        int[] c = prompt(3, 12);
        PullOutcome reused = cluster.pull(d, "c", c, cluster.prefill(p, "c", c));
        assertEquals(Arrays.stream(blocks).sorted().boxed().toList(),
                Arrays.stream(reused.localBlockIds()).sorted().boxed().toList(), "the only 3 blocks, a's before");

        assertTrue(reused.kv().blocksEpoch() != epoch);
        for (int rank = 0; rank < 2; rank++) {
            for (long e : epochs(first, rank, blocks)) {
                assertEquals(reused.kv().blocksEpoch(), e, "a reader of a's blocks now finds another epoch");
            }
        }
        cluster.release(d, "c");
        cluster.assertNoLeak();
    }

    private static boolean allZero(byte[] bytes) {
        for (byte x : bytes) {
            if (x != 0) {
                return false;
            }
        }
        return true;
    }
}
