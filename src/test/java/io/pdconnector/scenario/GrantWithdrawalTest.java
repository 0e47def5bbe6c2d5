package io.pdconnector.scenario;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.error.InvalidInputException;
import io.pdconnector.error.StateConflictException;
import io.pdconnector.error.UnavailableException;
import io.pdconnector.producer.Commit;
import io.pdconnector.producer.CreditGrant;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.testing.Cluster;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A grant whose answer never reached the engine (its batch timed out while P was held up, and P granted
 * afterwards): the engine withdraws the ask by the id it gave it, in whichever order the ask and the
 * withdrawal reach P, and no block or slot stays held by a grant nobody knows of.
 */
class GrantWithdrawalTest {

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

    private CreditGrant ask(ProducerFixture p, int blocks, int leases, String askId) {
        return cluster.await(p.facade().submitGrant(blocks, leases, null, askId));
    }

    /** The engine returns a grant it holds; a step later P holds nothing. */
    private void returnAndFindNothingHeld(ProducerFixture p, CreditGrant g) {
        assertTrue(cluster.await(p.facade().submitReturn(g.creditId())));
        cluster.steps(2);
        cluster.assertNoLeak();
    }

    @Test
    void aWithdrawalAfterTheGrant_takesItBack_slotsZeroedFirst_andACommitToItIsRefused() {
        ProducerFixture p = producer(2);
        int capacity = p.config().numBlocks();
        CreditGrant lost = ask(p, capacity, 2, "engine-1.7");
        assertEquals(0, p.snapshot().freeBlocks(), "the lost answer's grant took every free block");
        CreditGrant.GrantedLease lease = lost.leases().getFirst();

        assertTrue(cluster.await(p.facade().submitWithdraw("engine-1.7")), "P held a grant of that ask");
        assertEquals(0, p.slotValue(0, lease.slot()), "the slot is zeroed by the time the withdrawal is answered");
        assertEquals(0, p.slotValue(1, lease.slot()));
        cluster.steps(2);
        assertEquals(capacity, p.snapshot().freeBlocks(), "its blocks are free again");
        assertEquals(1, p.counters().creditsWithdrawn.get());
        int[] blocks = Arrays.copyOf(lost.blockIds(), 1);
        assertThrows(StateConflictException.class, () -> cluster.await(p.facade().submitCommit(
                new Commit(lost.creditId(), "r", 4, blocks, lease.slot(), lease.nonce()))));
        CreditGrant next = ask(p, 1, 1, "engine-1.8");
        assertEquals(1, next.blockIds().length, "the engine's next ask is granted");
        StateConflictException again = assertThrows(StateConflictException.class, () -> ask(p, 1, 1, "engine-1.8"),
                "an ask id names one ask");
        assertEquals("ask-id-used", again.reason(), "the engine withdraws an ask that reached P twice");
        returnAndFindNothingHeld(p, next);
    }

    /** The withdrawal overtook its ask (another connection, or the ask still queued): the ask is refused. */
    @Test
    void aWithdrawalBeforeItsAsk_refusesTheAsk_untilTheReservationTimeout() {
        ProducerFixture p = producer(1);
        int capacity = p.config().numBlocks();
        assertFalse(cluster.await(p.facade().submitWithdraw("late-ask")), "P has not seen that ask");
        StateConflictException refused = assertThrows(StateConflictException.class, () -> ask(p, 4, 1, "late-ask"));
        assertTrue(refused.getMessage().contains("withdrawn"), refused.getMessage());
        assertEquals(capacity, p.snapshot().freeBlocks(), "the refused ask holds nothing");
        assertEquals(0, p.counters().creditsGranted.get());

        cluster.clock.advance(RESERVATION.plusSeconds(1));
        cluster.steps(1);
        CreditGrant later = ask(p, 4, 1, "late-ask");
        assertEquals(4, later.blockIds().length, "an ask later than a grant would live is no longer refused");
        returnAndFindNothingHeld(p, later);
    }

    /** Both ask and withdrawal queued for the same step, the withdrawal second: the grant is made, then taken back. */
    @Test
    void aWithdrawalInTheStepOfItsAsk_leavesNoGrant() {
        ProducerFixture p = producer(1);
        var grant = p.facade().submitGrant(2, 1, null, "same-step");
        var withdrawn = p.facade().submitWithdraw("same-step");
        cluster.steps(3);
        assertTrue(grant.isDone());
        boolean granted = !grant.isCompletedExceptionally();
        assertEquals(granted, cluster.await(withdrawn), "true exactly when the ask had made a grant");
        cluster.steps(2);
        assertEquals(p.config().numBlocks(), p.snapshot().freeBlocks());
        cluster.assertNoLeak();
    }

    /** Withdrawals of asks P never sees are kept, but not without bound: past it, that withdrawal alone is a 503. */
    @Test
    void aWithdrawalPCannotKeepIsRefusedAlone_andTheLoopGoesOn() {
        ProducerFixture p = producer(1);
        for (int i = 0; i < 4096; i++) {
            assertFalse(cluster.await(p.facade().submitWithdraw("never-" + i)));
        }
        UnavailableException full = assertThrows(UnavailableException.class,
                () -> cluster.await(p.facade().submitWithdraw("one-more")));
        assertEquals("too-many-withdrawals", full.reason());
        assertEquals(0, p.counters().requestsFailed.get(), "a refusal, not a failure of the step");
        CreditGrant g = ask(p, 2, 1, "still-served");
        returnAndFindNothingHeld(p, g);
    }

    @Test
    void badAskIdsAreRefusedBeforeReachingP() {
        ProducerFixture p = producer(1);
        assertThrows(InvalidInputException.class, () -> p.facade().submitGrant(1, 1, null, "has space"));
        assertThrows(InvalidInputException.class, () -> p.facade().submitGrant(1, 1, null, "x".repeat(65)));
        assertThrows(InvalidInputException.class, () -> p.facade().submitWithdraw("a:b"));
        assertThrows(InvalidInputException.class, () -> p.facade().submitWithdraw(null));
        CreditGrant g = ask(p, 1, 1, "first");
        assertThrows(InvalidInputException.class, () -> p.facade().submitGrant(1, 1, g.creditId(), "ext"),
                "an extension is taken back by returning its grant, not by an ask id");
        returnAndFindNothingHeld(p, g);
        assertEquals(p.config().numBlocks(), p.snapshot().freeBlocks());
    }
}
