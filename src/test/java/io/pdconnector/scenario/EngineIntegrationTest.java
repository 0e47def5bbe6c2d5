package io.pdconnector.scenario;

import static io.pdconnector.testing.Cluster.assertDeclined;
import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.ProducerConfig;
import io.pdconnector.consumer.ConsumerFixture;
import io.pdconnector.consumer.PullState;
import io.pdconnector.error.InvalidInputException;
import io.pdconnector.error.StateConflictException;
import io.pdconnector.error.UnknownRequestException;
import io.pdconnector.producer.LeaseState;
import io.pdconnector.producer.LeaseStatus;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.producer.Reservation;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An engine that writes the KV itself: reserve, write (through the shared files or by upload),
 * finish, and every way that can go wrong. P and D on loopback, stepped by the test.
 */
class EngineIntegrationTest {

    private static final Duration RESERVATION = Duration.ofMinutes(10);

    @TempDir
    Path shm;
    private final Cluster cluster = new Cluster();

    @AfterEach
    void close() {
        cluster.close();
    }

    private ProducerFixture producer(int tp) {
        return cluster.producer(config().tpSize(tp));
    }

    private ProducerConfig.Builder config() {
        return cluster.producerConfig("p").kvShmDir(shm).reservationTimeout(RESERVATION);
    }

    private ConsumerFixture decoder(int tp) {
        return cluster.consumer(cluster.consumerConfig("d").tpSize(tp));
    }

    private Reservation reserve(ProducerFixture p, String id, int tokens) {
        return cluster.await(p.facade().submitReserve(id, tokens));
    }

    private LeaseStatus status(ProducerFixture p, String id) {
        return cluster.await(p.facade().submitStatus(id));
    }

    /** Bytes in the upload layout: for each reserved block, each rank's slice in rank order. */
    private static byte[] kvBytes(Reservation r, long seed) {
        byte[] kv = new byte[Math.toIntExact(r.uploadBytes())];
        new Random(seed).nextBytes(kv);
        return kv;
    }

    /** What a local engine does: map each rank's file and write its slice of every reserved block. */
    private static void writeThroughFiles(Reservation r, byte[] kv) throws IOException {
        int tp = r.ranks().size();
        for (Reservation.RankRegion region : r.ranks()) {
            try (FileChannel channel = FileChannel.open(region.file().orElseThrow(), StandardOpenOption.READ,
                    StandardOpenOption.WRITE); Arena arena = Arena.ofConfined()) {
                MemorySegment file = channel.map(FileChannel.MapMode.READ_WRITE, 0, region.regionBytes(), arena);
                int[] blocks = r.blockIds();
                for (int i = 0; i < blocks.length; i++) {
                    MemorySegment.copy(kv, Math.toIntExact((i * tp + region.rank()) * r.blockBytes()), file,
                            ValueLayout.JAVA_BYTE, blocks[i] * r.blockBytes(), Math.toIntExact(r.blockBytes()));
                }
            }
        }
    }

    @Test
    void anEngineWritesThroughTheSharedFilesAndTheDecoderGetsExactlyThoseBytes() throws IOException {
        ProducerFixture p = producer(2);
        ConsumerFixture d = decoder(2);
        Reservation r = reserve(p, "e", 10);
        assertEquals(3, r.blockIds().length, "10 tokens in blocks of 4");
        assertEquals(3 * 2 * r.blockBytes(), r.uploadBytes());
        assertTrue(r.hasLease());
        for (Reservation.RankRegion region : r.ranks()) {
            assertEquals(shm.resolve("pd-p-r" + region.rank() + ".kv"), region.file().orElseThrow());
            assertEquals(16 * r.blockBytes(), Files.size(region.file().orElseThrow()), "every block of the rank");
        }
        LeaseStatus writing = status(p, "e");
        assertEquals(LeaseState.WRITING, writing.state());
        for (int rank = 0; rank < 2; rank++) {
            assertEquals(writing.nonce(), p.slotValue(rank, writing.slot()), "L2 done before the reservation is answered");
        }
        byte[] kv = kvBytes(r, 1);
        writeThroughFiles(r, kv);

        KvTransferParams params = cluster.await(p.facade().submitFinish("e"));

        assertEquals(10, params.remoteNumTokens());
        assertEquals(writing.nonce(), params.remoteLeaseNonce());
        assertEquals(LeaseState.EXPORTED, status(p, "e").state());
        assertEquals(PullState.RECEIVED, cluster.pull(d, "e", prompt(1, 10), params).state());
        assertArrayEquals(kv, cluster.await(d.submitReadKv("e")));
        cluster.release(d, "e");
        cluster.assertNoLeak();
        assertEquals(1, p.counters().leasesReleasedByReaders.get(), "released by its reader, as a prefill is");
    }

    @Test
    void anUploadLandsInEachRanksBlocksAndTheDecoderGetsExactlyThoseBytes() {
        ProducerFixture p = producer(2);
        ConsumerFixture d = decoder(2);
        Reservation r = reserve(p, "u", 7);
        byte[] kv = kvBytes(r, 2);

        cluster.await(p.facade().submitWriteKv("u", kv));
        KvTransferParams params = cluster.await(p.facade().submitFinish("u"));

        assertEquals(PullState.RECEIVED, cluster.pull(d, "u", prompt(2, 7), params).state());
        assertArrayEquals(kv, cluster.await(d.submitReadKv("u")));
        cluster.release(d, "u");
        cluster.assertNoLeak();
    }

    @Test
    void reservedBlocksStartZeroedEvenWhenAnEarlierRequestLeftKvInThem() {
        ProducerFixture p = producer(1);
        ConsumerFixture d = decoder(1);
        KvTransferParams earlier = cluster.prefill(p, "earlier", prompt(3, 8));
        cluster.await(p.facade().submitAbort("earlier"));
        cluster.steps(2);

        Reservation r = reserve(p, "later", 8);
        KvTransferParams params = cluster.await(p.facade().submitFinish("later"));

        assertArrayEquals(earlier.blockIds(), r.blockIds(), "the freed blocks were reused (LIFO)");
        assertEquals(PullState.RECEIVED, cluster.pull(d, "later", prompt(3, 8), params).state());
        assertArrayEquals(new byte[Math.toIntExact(r.uploadBytes())], cluster.await(d.submitReadKv("later")));
        cluster.release(d, "later");
        cluster.assertNoLeak();
    }

    @Test
    void finishBeforeAnyUploadExportsAndAnUploadAfterFinishIsRefused() {
        ProducerFixture p = producer(1);
        Reservation r = reserve(p, "f", 5);
        KvTransferParams params = cluster.await(p.facade().submitFinish("f"));
        assertTrue(params.hasLease(), "finish cannot know how the engine wrote; it exports what the blocks hold");

        StateConflictException e = assertThrows(StateConflictException.class,
                () -> cluster.await(p.facade().submitWriteKv("f", kvBytes(r, 3))));

        assertTrue(e.getMessage().contains("EXPORTED") && e.getMessage().contains("finished already"), e.getMessage());
        assertEquals(params.remoteLeaseNonce(), p.slotValue(0, params.remoteLeaseSlot()), "the live lease is untouched");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void anUploadOfTheWrongSizeIsRefusedAndChangesNothing() {
        ProducerFixture p = producer(2);
        ConsumerFixture d = decoder(2);
        Reservation r = reserve(p, "w", 5);
        byte[] good = kvBytes(r, 4);

        for (int size : new int[] {0, good.length - 1, good.length + 1, good.length / 2}) {
            byte[] bad = new byte[size];
            java.util.Arrays.fill(bad, (byte) 7);
            InvalidInputException e = assertThrows(InvalidInputException.class,
                    () -> cluster.await(p.facade().submitWriteKv("w", bad)));
            assertTrue(e.getMessage().contains(good.length + " bytes (2 blocks x 2 ranks x " + r.blockBytes()
                    + " bytes), got " + size),
                    e.getMessage());
        }
        assertEquals(LeaseState.WRITING, status(p, "w").state());
        KvTransferParams params = cluster.await(p.facade().submitFinish("w"));
        cluster.pull(d, "w", prompt(4, 5), params);
        assertArrayEquals(new byte[good.length], cluster.await(d.submitReadKv("w")), "no refused byte landed");
        cluster.release(d, "w");
        cluster.assertNoLeak();
    }

    @Test
    void aSecondFinishIsRefusedAndTheLeaseIsExportedOnce() {
        ProducerFixture p = producer(1);
        reserve(p, "twice", 5);
        KvTransferParams first = cluster.await(p.facade().submitFinish("twice"));
        long expiresAt = p.lease("twice").expiresAtMillis();
        cluster.clock.advance(Duration.ofSeconds(5));

        StateConflictException e = assertThrows(StateConflictException.class,
                () -> cluster.await(p.facade().submitFinish("twice")));

        assertTrue(e.getMessage().contains("finished already"), e.getMessage());
        assertEquals(1, p.counters().leasesExported.get());
        assertEquals(expiresAt, p.lease("twice").expiresAtMillis(), "a second finish does not restart the clock");
        assertEquals(first.remoteLeaseNonce(), status(p, "twice").nonce());
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void abortOfAReservedRequestZeroesItsSlotsAndFreesItsBlocks() {
        ProducerFixture p = producer(2);
        reserve(p, "gone", 9);
        LeaseStatus held = status(p, "gone");

        cluster.await(p.facade().submitAbort("gone"));

        assertNull(p.lease("gone"), "every rank zeroed its slot in the abort's step, then the blocks were freed");
        for (int rank = 0; rank < 2; rank++) {
            assertEquals(0, p.slotValue(rank, held.slot()), "rank " + rank);
        }
        assertEquals(1, p.counters().leasesAborted.get());
        assertThrows(UnknownRequestException.class, () -> cluster.await(p.facade().submitFinish("gone")));
        assertThrows(UnknownRequestException.class, () -> cluster.await(p.facade().submitWriteKv("gone", new byte[1])));
        assertEquals(0, p.counters().leasesExported.get(), "an aborted reservation is never exported");
        cluster.assertNoLeak();
    }

    @Test
    void L4_aReservationWithNoFreeSlotIsExportedWithoutLeaseFieldsAndAVerifyingDecoderDeclinesIt() {
        ProducerFixture p = cluster.producer(config().blocks(16, 4, 1));
        ConsumerFixture d = decoder(1);
        assertTrue(reserve(p, "slotted", 4).hasLease());

        Reservation r = reserve(p, "slotless", 4);

        assertFalse(r.hasLease());
        LeaseStatus s = status(p, "slotless");
        assertEquals(LeaseState.WRITING, s.state());
        assertNull(s.slot());
        assertNull(s.nonce());
        KvTransferParams params = cluster.await(p.facade().submitFinish("slotless"));
        assertFalse(params.hasLease());
        assertEquals(1, p.counters().exportsWithoutSlot.get());
        assertDeclined(cluster.pull(d, "slotless", prompt(5, 4), params), "no_lease");
        cluster.await(p.facade().submitAbort("slotted"));
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void aReservationOutlivesTheLeaseDurationIgnoresHeartbeatsAndIsTakenBackOnlyAtItsFinishDeadline() {
        ProducerFixture p = producer(1);
        reserve(p, "slow", 5);
        var heartbeat = cluster.rawPeer("hb", "p");

        cluster.clock.advance(Cluster.LEASE.multipliedBy(3));
        heartbeat.send(0, "HB:slow");
        cluster.steps(3);

        LeaseStatus s = status(p, "slow");
        assertEquals(LeaseState.WRITING, s.state(), "no lease clock runs before finish");
        assertEquals(RESERVATION.minus(Cluster.LEASE.multipliedBy(3)).toMillis(), s.finishInMillis());
        assertNull(s.expiresInMillis());
        assertEquals(1, p.counters().heartbeatsIgnored.get(), "heartbeats extend exported leases only (L8)");

        cluster.clock.advance(RESERVATION);
        cluster.steps(3);

        assertNull(p.lease("slow"));
        assertEquals(1, p.counters().reservationsAbandoned.get());
        assertEquals(0, p.counters().leasesExpired.get(), "taken back, not expired: it never was a lease");
        assertThrows(UnknownRequestException.class, () -> cluster.await(p.facade().submitFinish("slow")));
        cluster.assertNoLeak();
    }

    @Test
    void theLeaseClockStartsAtFinish() {
        ProducerFixture p = producer(1);
        reserve(p, "late", 5);
        cluster.clock.advance(Cluster.LEASE.multipliedBy(2));

        cluster.await(p.facade().submitFinish("late"));

        assertEquals(Cluster.LEASE.toMillis(), status(p, "late").expiresInMillis());
        assertNull(status(p, "late").finishInMillis());
        cluster.lapseAll();
        assertEquals(1, p.counters().leasesExpired.get());
        cluster.assertNoLeak();
    }

    @Test
    void statusFollowsALeaseThroughReleaseAndAnUnknownRequestIsUnknown() {
        ProducerFixture p = producer(2);
        KvTransferParams a = cluster.prefill(p, "s", prompt(6, 6));
        var reader = cluster.rawPeer("reader", "p");

        LeaseStatus exported = status(p, "s");
        reader.send(0, "s:1:" + a.remoteLeaseNonce());
        cluster.steps(2);
        LeaseStatus releasing = status(p, "s");

        assertEquals(LeaseState.EXPORTED, exported.state());
        assertArrayEquals(a.blockIds(), exported.blockIds());
        assertEquals(a.remoteLeaseSlot(), exported.slot());
        assertEquals(0, exported.ranksFinished());
        assertEquals(LeaseState.RELEASING, releasing.state());
        assertEquals(1, releasing.ranksFinished());
        assertEquals(2, releasing.ranks());
        assertThrows(UnknownRequestException.class, () -> cluster.await(p.facade().submitStatus("nobody")));
        reader.send(1, "s:1:" + a.remoteLeaseNonce());
        cluster.assertNoLeak();
    }

    @Test
    void badReservationsAreRefusedOnTheCallersThreadAndQueueNothing() {
        ProducerFixture p = producer(1);

        assertThrows(InvalidInputException.class, () -> p.facade().submitReserve("zero", 0));
        assertThrows(InvalidInputException.class, () -> p.facade().submitReserve("huge", 16 * 4 + 1));
        assertThrows(InvalidInputException.class, () -> p.facade().submitReserve("a:b", 4));
        assertThrows(InvalidInputException.class, () -> p.facade().submitWriteKv("x", null));

        cluster.steps(1);
        assertEquals(0, p.snapshot().liveLeases());
    }

    @Test
    void aDuplicateReservationIsRefusedWhileTheFirstIsHeld() {
        ProducerFixture p = producer(1);
        reserve(p, "dup", 4);

        StateConflictException e = assertThrows(StateConflictException.class, () -> reserve(p, "dup", 4));

        assertTrue(e.getMessage().contains("still holds a lease"), e.getMessage());
        assertEquals(1, p.snapshot().liveLeases());
        cluster.await(p.facade().submitAbort("dup"));
        cluster.assertNoLeak();
    }

    @Test
    void shutdownReleasesAnUnfinishedReservationAndUnlinksTheKvFiles() {
        ProducerFixture p = producer(2);
        Reservation r = reserve(p, "open", 4);

        cluster.stop(p);

        for (Reservation.RankRegion region : r.ranks()) {
            assertFalse(Files.exists(region.file().orElseThrow()), region.file() + " was unlinked");
        }
    }

    @Test
    void withoutAShmDirectoryTheRegionsAreAnonymousAndOnlyUploadsReachThem() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));

        Reservation r = reserve(p, "anon", 4);

        assertTrue(r.ranks().stream().allMatch(region -> region.file().isEmpty()));
        cluster.await(p.facade().submitWriteKv("anon", kvBytes(r, 5)));
        cluster.await(p.facade().submitAbort("anon"));
        cluster.assertNoLeak();
    }
}
