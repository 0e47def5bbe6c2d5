package io.pdconnector.scenario;

import static io.pdconnector.testing.Cluster.assertDeclined;
import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.consumer.ConsumerFixture;
import io.pdconnector.consumer.PullState;
import io.pdconnector.error.InvalidInputException;
import io.pdconnector.error.StateConflictException;
import io.pdconnector.producer.Commit;
import io.pdconnector.producer.CreditGrant;
import io.pdconnector.producer.LeaseState;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.producer.Reservation;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The engine path without a round trip on the engine's scheduler thread: P grants blocks and lease
 * slots in bulk, the engine writes a request's KV into granted blocks, hands out params it builds
 * itself from the grant, and commits afterwards. The orderings this opens: a decoder that reads (and
 * notifies P) before the commit reaches P, a commit that never comes, a commit that P refuses.
 */
class EngineCreditTest {

    private static final Duration RESERVATION = Duration.ofMinutes(10);

    @TempDir
    Path shm;
    private final Cluster cluster = new Cluster();

    @AfterEach
    void close() {
        cluster.close();
    }

    private ProducerFixture producer(int tp) {
        return cluster.producer(cluster.producerConfig("p").kvShmDir(shm).reservationTimeout(RESERVATION).tpSize(tp));
    }

    private ConsumerFixture decoder(int tp) {
        return cluster.consumer(cluster.consumerConfig("d").tpSize(tp));
    }

    private CreditGrant grant(ProducerFixture p, int blocks, int leases) {
        return cluster.await(p.facade().submitGrant(blocks, leases));
    }

    /** What the plugin hands the router: the grant's template and this request's blocks, slot and nonce. */
    private static KvTransferParams paramsOf(CreditGrant g, String id, int tokens, int[] blocks, CreditGrant.GrantedLease l) {
        Map<String, Object> m = new LinkedHashMap<>(g.paramsTemplate());
        m.put("remote_request_id", id);
        m.put("remote_block_ids", List.of(Arrays.stream(blocks).boxed().toList()));
        m.put("remote_num_tokens", tokens);
        m.put("remote_lease_slot", l.slot());
        m.put("remote_lease_nonce", l.nonce());
        return KvTransferParams.fromMap(m);
    }

    /** What a local engine does: each rank's slice of each block, written through the rank's file. */
    private static byte[] writeThroughFiles(CreditGrant g, int[] blocks, long seed) throws IOException {
        int tp = g.ranks().size();
        byte[] kv = new byte[Math.toIntExact(blocks.length * tp * g.blockBytes())];
        new Random(seed).nextBytes(kv);
        for (Reservation.RankRegion region : g.ranks()) {
            try (FileChannel channel = FileChannel.open(region.file().orElseThrow(), StandardOpenOption.READ,
                    StandardOpenOption.WRITE); Arena arena = Arena.ofConfined()) {
                MemorySegment file = channel.map(FileChannel.MapMode.READ_WRITE, 0, region.regionBytes(), arena);
                for (int i = 0; i < blocks.length; i++) {
                    MemorySegment.copy(kv, Math.toIntExact((i * tp + region.rank()) * g.blockBytes()), file,
                            ValueLayout.JAVA_BYTE, blocks[i] * g.blockBytes(), Math.toIntExact(g.blockBytes()));
                }
            }
        }
        return kv;
    }

    private static int[] first(CreditGrant g, int n) {
        return Arrays.copyOf(g.blockIds(), n);
    }

    @Test
    void L2_everyGrantedSlotHoldsItsNonceOnEveryRankWhenTheGrantIsAnswered() {
        ProducerFixture p = producer(2);
        CreditGrant g = grant(p, 8, 3);
        assertEquals(8, g.blockIds().length);
        assertEquals(3, g.leases().size());
        assertEquals(List.of("p", "p"), List.of(g.paramsTemplate().get("remote_engine_id"), "p"));
        for (CreditGrant.GrantedLease l : g.leases()) {
            for (int rank = 0; rank < 2; rank++) {
                assertEquals(l.nonce(), p.slotValue(rank, l.slot()), "rank " + rank + " slot " + l.slot());
            }
        }
        assertEquals(3, g.leases().stream().mapToLong(CreditGrant.GrantedLease::nonce).distinct().count(), "L1");
        assertTrue(cluster.await(p.facade().submitReturn(g.creditId())));
        cluster.assertNoLeak();
    }

    /** The decoder reads and notifies P before the commit: it gets the engine's bytes, and the commit releases at once. */
    @Test
    void aPullBeforeTheCommit_receivesTheEnginesKv_andItsEarlyReadsReleaseTheLeaseAtTheCommit() throws IOException {
        ProducerFixture p = producer(2);
        ConsumerFixture d = decoder(2);
        CreditGrant g = grant(p, 8, 2);
        int[] blocks = first(g, 3);
        CreditGrant.GrantedLease lease = g.leases().getFirst();
        byte[] kv = writeThroughFiles(g, blocks, 7);
        KvTransferParams params = paramsOf(g, "early", 10, blocks, lease);

        assertEquals(PullState.RECEIVED, cluster.pull(d, "early", prompt(1, 10), params).state());
        assertArrayEquals(kv, cluster.await(d.submitReadKv("early")));
        cluster.release(d, "early");
        cluster.steps(2);
        assertEquals(2, p.counters().earlyNotifications.get(), "each P rank kept its reader's early notification");

        KvTransferParams committed = cluster.await(p.facade().submitCommit(
                new Commit(g.creditId(), "early", 10, blocks, lease.slot(), lease.nonce())));
        assertEquals(params.toMap(), committed.toMap(), "the params the engine built are the ones P exports");
        cluster.steps(2);
        assertNull(p.lease("early"), "the early reads, counted at the commit, released the lease");
        assertEquals(1, p.counters().leasesReleasedByReaders.get());
        assertTrue(cluster.await(p.facade().submitReturn(g.creditId())));
        cluster.assertNoLeak();
    }

    /** A read naming another request id with a granted nonce is kept, but never counts for the request committed. */
    @Test
    void anEarlyReadOfAnotherRequestIdDoesNotReleaseTheCommittedLease() throws IOException {
        ProducerFixture p = producer(1);
        CreditGrant g = grant(p, 4, 1);
        CreditGrant.GrantedLease lease = g.leases().getFirst();
        writeThroughFiles(g, first(g, 1), 3);
        cluster.rawPeer("rogue", "p").send(0, "other:1:" + lease.nonce());
        cluster.steps(2);
        cluster.await(p.facade().submitCommit(new Commit(g.creditId(), "mine", 4, first(g, 1), lease.slot(), lease.nonce())));
        cluster.steps(2);
        assertEquals(LeaseState.EXPORTED, p.lease("mine").state());
        cluster.await(p.facade().submitAbort("mine"));
        assertTrue(cluster.await(p.facade().submitReturn(g.creditId())));
        cluster.assertNoLeak();
    }

    /**
     * The engine died after handing out params: the grant expires, every granted slot is zeroed before
     * any granted block is free (L3), and a decoder reading afterwards declines.
     */
    @Test
    void L3_aCommitThatNeverComes_theGrantExpires_slotsZeroedBeforeBlocksAreFree_andALateReaderDeclines()
            throws IOException {
        ProducerFixture p = producer(2);
        ConsumerFixture d = decoder(2);
        CreditGrant g = grant(p, 6, 2);
        int[] blocks = first(g, 2);
        CreditGrant.GrantedLease lease = g.leases().getFirst();
        writeThroughFiles(g, blocks, 5);
        KvTransferParams params = paramsOf(g, "orphan", 8, blocks, lease);
        int freeBefore = p.snapshot().freeBlocks();

        cluster.clock.advance(RESERVATION.plusSeconds(1));
        for (int step = 0; step < 6; step++) {
            cluster.stepProducers();
            boolean slotHeld = p.slotValue(0, lease.slot()) != 0 || p.slotValue(1, lease.slot()) != 0;
            if (slotHeld) {
                assertEquals(freeBefore, p.snapshot().freeBlocks(), "a granted block was freed at step " + step
                        + " while a granted slot still held its nonce");
            }
        }
        assertEquals(1, p.counters().creditsExpired.get());
        assertEquals(0, p.slotValue(0, lease.slot()));
        assertDeclined(cluster.pull(d, "orphan", prompt(2, 8), params), "lease_mismatch");
        assertThrows(StateConflictException.class, () -> cluster.await(p.facade().submitCommit(
                new Commit(g.creditId(), "orphan", 8, blocks, lease.slot(), lease.nonce()))), "the late commit is refused");
        cluster.assertNoLeak();
    }

    @Test
    void aCommitNamingBlocksOrASlotNotOfItsGrant_isRefusedAndChangesNothing() {
        ProducerFixture p = producer(1);
        CreditGrant a = grant(p, 4, 1);
        CreditGrant b = grant(p, 4, 1);
        CreditGrant.GrantedLease la = a.leases().getFirst();
        int[] blocksOfB = first(b, 2);
        List<Commit> refused = List.of(
                new Commit(a.creditId(), "x", 8, blocksOfB, la.slot(), la.nonce()),
                new Commit(a.creditId(), "x", 8, first(a, 1), la.slot(), la.nonce()),
                new Commit(a.creditId(), "x", 8, new int[] {a.blockIds()[0], a.blockIds()[0]}, la.slot(), la.nonce()),
                new Commit(a.creditId(), "x", 8, first(a, 2), la.slot(), la.nonce() + 1),
                new Commit(a.creditId(), "x", 8, first(a, 2), b.leases().getFirst().slot(), b.leases().getFirst().nonce()));
        for (Commit c : refused) {
            assertThrows(InvalidInputException.class, () -> cluster.await(p.facade().submitCommit(c)), c.toString());
        }
        assertThrows(StateConflictException.class, () -> cluster.await(p.facade().submitCommit(
                new Commit("g0-999", "x", 8, first(a, 2), la.slot(), la.nonce()))), "an unknown grant");
        assertNull(p.lease("x"), "nothing was bound");
        assertEquals(la.nonce(), p.slotValue(0, la.slot()), "the granted slot is still the grant's");

        KvTransferParams ok = cluster.await(p.facade().submitCommit(
                new Commit(a.creditId(), "x", 8, first(a, 2), la.slot(), la.nonce())));
        assertEquals(la.nonce(), ok.remoteLeaseNonce());
        assertThrows(InvalidInputException.class, () -> cluster.await(p.facade().submitCommit(
                new Commit(a.creditId(), "y", 8, first(a, 2), la.slot(), la.nonce()))), "blocks and slot already bound");
        assertTrue(cluster.await(p.facade().submitReturn(a.creditId())));
        assertFalse(cluster.await(p.facade().submitReturn("g0-999")), "a grant P does not hold");
        assertThrows(StateConflictException.class, () -> cluster.await(p.facade().submitCommit(
                new Commit(a.creditId(), "z", 4, new int[] {a.blockIds()[3]}, la.slot(), la.nonce()))), "a returned grant");
        assertTrue(cluster.await(p.facade().submitReturn(b.creditId())));
        cluster.await(p.facade().submitAbort("x"));
        cluster.assertNoLeak();
    }

    /** A grant returned after its engine handed params out (its copy failed): answered only once its slots are zero. */
    @Test
    void aReturnIsAnsweredOnlyAfterEveryUnboundSlotOfTheGrantIsZero_soADecoderGivenItsParamsDeclines() {
        ProducerFixture p = producer(2);
        ConsumerFixture d = decoder(2);
        CreditGrant g = grant(p, 4, 2);
        int[] blocks = first(g, 1);
        CreditGrant.GrantedLease lease = g.leases().getFirst();
        KvTransferParams params = paramsOf(g, "failed-copy", 4, blocks, lease);
        var returned = p.facade().submitReturn(g.creditId());
        for (int step = 0; step < 3 && !returned.isDone(); step++) {
            cluster.stepProducers();
        }
        assertTrue(returned.join(), "P held the grant");
        for (CreditGrant.GrantedLease l : g.leases()) {
            assertEquals(0, p.slotValue(0, l.slot()), "rank 0 slot " + l.slot() + " when the return was answered");
            assertEquals(0, p.slotValue(1, l.slot()), "rank 1 slot " + l.slot() + " when the return was answered");
        }
        assertDeclined(cluster.pull(d, "failed-copy", prompt(3, 4), params), "lease_mismatch");
        assertThrows(StateConflictException.class, () -> cluster.await(p.facade().submitCommit(
                new Commit(g.creditId(), "failed-copy", 4, blocks, lease.slot(), lease.nonce()))));
        cluster.assertNoLeak();
    }

    /** An engine tops one grant up: the answer lists what was added, and a commit may take blocks of both. */
    @Test
    void anExtensionAddsBlocksAndSlotsToTheSameGrant_andAGrantNoLongerOpenCannotBeExtended() {
        ProducerFixture p = producer(1);
        CreditGrant g = grant(p, 1, 1);
        CreditGrant more = cluster.await(p.facade().submitGrant(2, 1, g.creditId()));
        assertEquals(g.creditId(), more.creditId());
        assertEquals(2, more.blockIds().length, "only the added blocks");
        assertEquals(1, more.leases().size());
        assertEquals(more.leases().getFirst().nonce(), p.slotValue(0, more.leases().getFirst().slot()), "L2");
        int[] both = {g.blockIds()[0], more.blockIds()[0], more.blockIds()[1]};
        CreditGrant.GrantedLease l = more.leases().getFirst();
        assertEquals(3, cluster.await(p.facade().submitCommit(
                new Commit(g.creditId(), "wide", 12, both, l.slot(), l.nonce()))).remoteBlockIds().getFirst().size());
        assertTrue(cluster.await(p.facade().submitReturn(g.creditId())));
        assertThrows(StateConflictException.class, () -> cluster.await(p.facade().submitGrant(1, 1, g.creditId())));
        cluster.await(p.facade().submitAbort("wide"));
        cluster.assertNoLeak();
    }

    @Test
    void aGrantTakesOnlyWhatIsFree_andAReservationStillGetsTheRest() {
        ProducerFixture p = producer(1);
        int capacity = p.config().numBlocks();
        CreditGrant g = grant(p, capacity - 2, 1);
        assertEquals(capacity - 2, g.blockIds().length);
        CreditGrant rest = grant(p, 5, 1);
        assertEquals(2, rest.blockIds().length, "only two blocks were left");
        assertThrows(io.pdconnector.error.UnavailableException.class, () -> grant(p, 1, 1), "no block is free: no grant");
        assertTrue(cluster.await(p.facade().submitReturn(rest.creditId())));
        cluster.steps(2);
        Reservation r = cluster.await(p.facade().submitReserve("r", 8));
        assertEquals(2, r.blockIds().length);
        cluster.await(p.facade().submitAbort("r"));
        assertTrue(cluster.await(p.facade().submitReturn(g.creditId())));
        cluster.assertNoLeak();
    }
}
