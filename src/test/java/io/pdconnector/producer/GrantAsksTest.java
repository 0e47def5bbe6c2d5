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
            assertNull(asks.withdraw("a" + i, 1_000 + i));
        }
        UnavailableException full = assertThrows(UnavailableException.class, () -> asks.withdraw("one-more", 5_000));
        assertEquals("too-many-withdrawals", full.reason());
        assertNull(asks.withdraw("a0", 9_000), "withdrawing an ask twice is no new tombstone");
        assertEquals(GrantAsks.MAX_TOMBSTONES, asks.tombstones());
        assertNotNull(asks.refusal("a1"));

        asks.prune(1_000 + 10);
        assertEquals(GrantAsks.MAX_TOMBSTONES - 10, asks.tombstones(), "a0 was renewed to 9,000; a1..a10 went");
        assertNull(asks.refusal("a1"), "a gone tombstone refuses nothing");
        assertNotNull(asks.refusal("a0"));
        assertNull(asks.withdraw("one-more", 5_000), "room again");
    }

    @Test
    void anAskIdNamesOneGrantWhileThatGrantIsHeld() {
        GrantAsks asks = new GrantAsks();
        asks.made("x", "g1-1");
        assertNotNull(asks.refusal("x"));
        assertEquals("g1-1", asks.withdraw("x", 1_000));
        asks.forget("x");
        assertNull(asks.refusal("x"));
        assertNull(asks.refusal(null), "an ask without an id is never refused for it");
    }
}
