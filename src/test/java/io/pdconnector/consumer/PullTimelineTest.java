package io.pdconnector.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The phases a pull reply reports, from the stamps D's loop took; a skipped phase is absent, not zero. */
class PullTimelineTest {

    private static final long MS = 1_000_000;

    @Test
    void aVerifiedPullHasEveryPhaseEachFromItsStampToTheNext() {
        Map<String, Double> phases = new PullTimeline(2 * MS, 3 * MS, 5 * MS, 9 * MS, 10 * MS)
                .phasesMillis(1 * MS, 12 * MS);

        assertEquals(List.of("to_loop_ms", "queued_ms", "post_ms", "read_ms", "slot_check_ms", "to_reply_ms"),
                List.copyOf(phases.keySet()));
        assertEquals(List.of(1.0, 1.0, 2.0, 4.0, 1.0, 2.0), List.copyOf(phases.values()));
    }

    @Test
    void withoutASlotCheckTheReadRunsUpToTheDecision() {
        Map<String, Double> phases = new PullTimeline(2 * MS, 3 * MS, 5 * MS, 0, 10 * MS).phasesMillis(1 * MS, 11 * MS);

        assertEquals(5.0, phases.get("read_ms"));
        assertTrue(!phases.containsKey("slot_check_ms"), phases.toString());
    }

    @Test
    void aPullDeclinedBeforeReadingWasOnlyQueued() {
        Map<String, Double> phases = new PullTimeline(2 * MS, 0, 0, 0, 7 * MS).phasesMillis(1 * MS, 8 * MS);

        assertEquals(Map.of("to_loop_ms", 1.0, "queued_ms", 5.0, "to_reply_ms", 1.0), phases);
    }

    @Test
    void anUndecidedPullHasNoPhases() {
        assertTrue(new PullTimeline(2 * MS, 3 * MS, 0, 0, 0).phasesMillis(1 * MS, 4 * MS).isEmpty());
    }
}
