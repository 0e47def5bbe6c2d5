package io.pdconnector.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class TrailTest {

    private static final String HEADER = "# configuration: CFG_REUSE    violated: received_own_bytes, assert !(bad[0])";

    @Test
    void eventsAreParsedWithTheNumbersTheyName() {
        Trail t = Trail.parse("MUT_X", List.of("# MUT_X: something", HEADER,
                "   14  DRank           D1 READ a0 lands: P blk 0 holds 1, into dblk 0",
                "   16  DRank           D1 slot READ a2: slot 0 holds 5, want 5 -> 3",
                "       spin: lease.pml:528, Error: assertion violated"));

        assertEquals("CFG_REUSE", t.configuration());
        assertEquals(2, t.events().size(), "the spin message is not an event");
        Trail.Event land = t.events().getFirst();
        assertEquals(Trail.Kind.READ_LANDS, land.kind());
        assertEquals(1, land.rank());
        assertEquals(0, land.attempt());
        Trail.Event slot = t.events().get(1);
        assertEquals(2, slot.attempt());
        assertEquals(3, slot.number("result"));
    }

    @Test
    void theTrustAndQuarantineEventsNameTheirSenderRankAndAttempt() {
        Trail t = Trail.parse("MUT_X", List.of(HEADER,
                "   20  LeaseScheduler  P heartbeat of a0 req=0 extends a1",
                "   21  PRank           P1 forged notification req=0 counted for a0, finished-sending",
                "   22  LeaseScheduler  tick (now 3)",
                "   23  DReader         D abort a2",
                "   24  DReader         D quarantined dblk 1 of a2 free: its READs ended"));

        assertEquals(List.of(Trail.Kind.HEARTBEAT, Trail.Kind.FORGED_NOTIFICATION, Trail.Kind.TICK,
                Trail.Kind.PULL_ENDS_EARLY, Trail.Kind.QUARANTINE_ENDS),
                t.events().stream().map(Trail.Event::kind).toList());
        assertEquals(0, t.events().get(0).attempt(), "the heartbeat's sender, not the lease it found");
        assertEquals(1, t.events().get(1).rank());
        assertEquals(2, t.events().get(3).attempt());
    }

    @Test
    void theEnginePathsEventsNameTheirGrantRankAndAttempt() {
        Trail t = Trail.parse("MUT_X", List.of(
                "# configuration: CFG_GRANT    violated: received_own_bytes, assert !(bad[0])",
                "    9  LeaseScheduler  P grant g0 (blk 0, slot 0, nonce 5) and g1 (blk 1, no slot)",
                "   14  Engine          E bind a0 req=0 to blk 1 (g1) and slot 0 (g0), nonce 5",
                "   16  LeaseScheduler  P grant g1 closes (expired or returned)",
                "   20  PRank           P1 notification of a0 kept early for the commit",
                "   22  LeaseScheduler  P commit a0 accepted: exported (blk 0, slot 0, nonce 5)",
                "   23  LeaseScheduler  P commit a0 refused",
                "   24  LeaseScheduler  P1 early read of request 1 counted for a0, finished-sending"));

        assertTrue(t.granted());
        assertEquals(List.of(Trail.Kind.GRANT, Trail.Kind.ENGINE_BIND, Trail.Kind.GRANT_CLOSES, Trail.Kind.EARLY_KEPT,
                Trail.Kind.COMMIT, Trail.Kind.COMMIT, Trail.Kind.EARLY_COUNTED),
                t.events().stream().map(Trail.Event::kind).toList());
        assertEquals(1, t.events().get(1).number("g"), "the grant the engine took the block from");
        assertEquals(1, t.events().get(2).number("g"));
        assertEquals(1, t.events().get(3).rank());
        assertEquals("accepted", t.events().get(4).word("outcome"));
        assertEquals("refused", t.events().get(5).word("outcome"));
        assertEquals("request 1", t.events().get(6).word("from"));
    }

    @Test
    void anEventTheReplayDoesNotKnowFailsTheParse() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Trail.parse("MUT_X",
                List.of(HEADER, "   20  LeaseScheduler  P teleports a0")));
        assertTrue(e.getMessage().contains("unknown model event 'P teleports a0'"), e.getMessage());
    }

    @Test
    void aFileWithoutHeaderOrEventsIsNotATrail() {
        assertThrows(IllegalArgumentException.class, () -> Trail.parse("MUT_X", List.of(HEADER)));
        assertThrows(IllegalArgumentException.class, () -> Trail.parse("MUT_X",
                List.of("    9  LeaseScheduler  P export a0")));
    }
}
