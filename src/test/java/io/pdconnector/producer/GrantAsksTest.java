package io.pdconnector.producer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.pdconnector.error.UnavailableException;
import org.junit.jupiter.api.Test;

/** The tombstones of withdrawn asks P has not seen are bounded in number and in time. */
class GrantAsksTest {

    @Test
    void tombstonesAreBounded_aFullTableRefusesANewOne_andEachGoesAtItsTime() {
        GrantAsks asks = new GrantAsks();
        for (int i = 0; i < GrantAsks.MAX_TOMBSTONES; i++) {
            asks.keepWithdrawal("a" + i, 1_000 + i);
        }
        UnavailableException full = assertThrows(UnavailableException.class, () -> asks.keepWithdrawal("one-more", 5_000));
        assertEquals("too-many-withdrawals", full.reason());
        asks.keepWithdrawal("a0", 9_000); // withdrawing an ask twice is no new tombstone
        assertEquals(GrantAsks.MAX_TOMBSTONES, asks.tombstones());
        assertNotNull(asks.refusal("a1", null));

        asks.prune(1_000 + 10);
        assertEquals(GrantAsks.MAX_TOMBSTONES - 10, asks.tombstones(), "a0 was renewed to 9,000; a1..a10 went");
        assertNull(asks.refusal("a1", null), "a gone tombstone refuses nothing");
        assertNotNull(asks.refusal("a0", null));
        asks.keepWithdrawal("one-more", 5_000); // room again
        assertEquals(GrantAsks.MAX_TOMBSTONES - 9, asks.tombstones());
    }

    @Test
    void anAskIdNamesOneGrantWhileThatGrantIsHeld() {
        GrantAsks asks = new GrantAsks();
        Credit made = new Credit("g1-1", "x", 1_000);
        assertEquals("ask-id-used", asks.refusal("x", made).reason());
        assertNull(asks.refusal("x", null), "once that grant is gone, nothing refuses the id");
        assertNull(asks.refusal(null, null), "an ask without an id is never refused for it");
    }
}
