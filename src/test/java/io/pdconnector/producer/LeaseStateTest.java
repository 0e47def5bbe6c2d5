package io.pdconnector.producer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class LeaseStateTest {

    private static Lease lease(int slot) {
        return new Lease("r", new int[] {0}, 1, slot, slot < 0 ? 0 : 7, 2);
    }

    @Test
    void aSlottedLeaseGoesThroughEveryStateInOrder() {
        Lease l = lease(3);
        l.moveTo(LeaseState.SLOT_WRITTEN);
        l.moveTo(LeaseState.WRITING);
        l.moveTo(LeaseState.EXPORTED);
        l.moveTo(LeaseState.RELEASING);
        l.moveTo(LeaseState.FREED);
        assertEquals(LeaseState.FREED, l.state());
    }

    @Test
    void illegalTransitionsAreRejectedAndChangeNothing() {
        Lease slotted = lease(3);
        assertThrows(IllegalStateException.class, () -> slotted.moveTo(LeaseState.EXPORTED),
                "a slotted lease is exported only after its slot is written");
        assertThrows(IllegalStateException.class, () -> slotted.moveTo(LeaseState.WRITING),
                "a slotted lease's KV is written only after its slot is");
        assertThrows(IllegalStateException.class, () -> slotted.moveTo(LeaseState.FREED));
        assertEquals(LeaseState.RESERVED, slotted.state());
        Lease slotless = lease(Lease.NO_SLOT);
        assertThrows(IllegalStateException.class, () -> slotless.moveTo(LeaseState.SLOT_WRITTEN));
        assertThrows(IllegalStateException.class, () -> slotless.moveTo(LeaseState.EXPORTED),
                "nothing is exported that was not WRITING");
        slotless.moveTo(LeaseState.WRITING);
        slotless.moveTo(LeaseState.EXPORTED);
        slotless.moveTo(LeaseState.RELEASING);
        slotless.moveTo(LeaseState.FREED);
        assertThrows(IllegalStateException.class, () -> slotless.moveTo(LeaseState.RELEASING),
                "FREED is final: nothing revives a lease");
    }

    @Test
    void aRankCannotReportFinishedSendingBeforeClearing() {
        Lease l = lease(3);
        assertThrows(IllegalStateException.class, () -> l.rankFinishedSending(0));
    }
}
