package io.pdconnector.producer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The reaper looks at the lease table only once a deadline may have come; every deadline a lease gets says so. */
class ReapScheduleTest {

    private final LeaseTable table = new LeaseTable(1);
    private final ReapSchedule schedule = table.reaping();

    /** What a sweep at {@code now} that found nothing due leaves: no deadline before the earliest held one. */
    private void sweptAt(long now) {
        assertTrue(schedule.sweepDue(now));
        long next = Long.MAX_VALUE;
        for (Lease lease : schedule.timed()) {
            next = Math.min(next, lease.reapableFromMillis());
        }
        schedule.swept(next);
    }

    @Test
    void aFinishDeadlineSetAfterASweepWakesTheReaperAtIt() {
        Lease lease = table.reserve("r", new int[] {0}, 1, 0, 7);
        sweptAt(0);
        assertFalse(schedule.sweepDue(1_000_000), "a reserved lease has no deadline yet");

        lease.moveTo(LeaseState.SLOT_WRITTEN);
        lease.startWriting(500);

        assertFalse(schedule.sweepDue(499));
        assertTrue(schedule.sweepDue(500));
    }

    @Test
    void theTimeUntilASweepIsDueIsWhatAnIdleProducerParksAtMost() {
        assertEquals(0, schedule.millisUntilDue(1_000), "a table never swept is swept at the first step");
        sweptAt(1_000);
        assertEquals(Long.MAX_VALUE, schedule.millisUntilDue(1_000), "no deadline: nothing to wake for");

        Lease lease = table.reserve("r", new int[] {0}, 1, 0, 7);
        lease.moveTo(LeaseState.SLOT_WRITTEN);
        lease.startWriting(1_500);

        assertEquals(500, schedule.millisUntilDue(1_000));
        assertEquals(1, schedule.millisUntilDue(1_499));
        assertEquals(0, schedule.millisUntilDue(1_500));
        assertEquals(0, schedule.millisUntilDue(9_000), "overdue is due now, not a negative park");
    }

    @Test
    void anExpirySetAfterASweepWakesTheReaperAtItAndAHeartbeatLeavesItEarly() {
        Lease lease = table.reserve("r", new int[] {0}, 1, 0, 7);
        lease.moveTo(LeaseState.SLOT_WRITTEN);
        lease.startWriting(Long.MAX_VALUE); // a grant's placeholder: the grant's deadline governs it
        sweptAt(0);
        assertFalse(schedule.sweepDue(1_000_000));

        lease.startClock(100, 300, 10_000);
        lease.moveTo(LeaseState.EXPORTED);
        assertTrue(schedule.sweepDue(300));
        assertFalse(schedule.sweepDue(299));

        lease.extend(200, 1_000); // later only: a sweep at 300 finds nothing due and takes 1,200
        sweptAt(300);
        assertFalse(schedule.sweepDue(1_199));
        assertTrue(schedule.sweepDue(1_200));
    }

    @Test
    void aSweepWalksTheLeasesWithADeadlineUntilTheyLeaveTheTable_notAGrantsPlaceholders() {
        Lease placeholder = table.reserve("grant-slot", new int[] {0}, 1, 0, 7);
        placeholder.moveTo(LeaseState.SLOT_WRITTEN);
        placeholder.startWriting(Long.MAX_VALUE); // the grant's deadline governs it
        Lease writing = table.reserve("writing", new int[] {1}, 1, 1, 8);
        writing.moveTo(LeaseState.SLOT_WRITTEN);
        writing.startWriting(500);
        Lease exported = table.reserve("exported", new int[] {2}, 1, 2, 9);
        exported.moveTo(LeaseState.SLOT_WRITTEN);
        exported.startWriting(500);
        exported.startClock(100, 300, 10_000);
        exported.moveTo(LeaseState.EXPORTED);

        assertEquals(List.of(writing, exported), List.copyOf(schedule.timed()));

        exported.moveTo(LeaseState.RELEASING);
        exported.moveTo(LeaseState.FREED);
        table.remove(exported);
        assertEquals(List.of(writing), List.copyOf(schedule.timed()), "a lease that left the table is not walked");
    }
}
