package io.pdconnector.producer;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The reaper looks at the lease table only once a deadline may have come; every deadline a lease gets says so. */
class ReapScheduleTest {

    private final LeaseTable table = new LeaseTable(1);
    private final ReapSchedule schedule = table.reaping();

    /** What a sweep at {@code now} that found nothing due leaves: no deadline before the earliest held one. */
    private void sweptAt(long now) {
        assertTrue(schedule.sweepDue(now));
        long next = Long.MAX_VALUE;
        for (Lease lease : table.live()) {
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
}
