package io.pdconnector.router;

import static io.pdconnector.router.Fleets.capacity;
import static io.pdconnector.router.Fleets.producer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.controlplane.InstanceRecord;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class PickPolicyTest {

    private static final Load IDLE = id -> 0;

    private static List<String> draws(PickPolicy policy, List<InstanceRecord> candidates, Load load, int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(policy.choose(candidates, load).engineId());
        }
        return out;
    }

    @Test
    void roundRobin_takesEachInTurn_whateverTheLoad() {
        List<InstanceRecord> c = List.of(producer("a", 1, capacity(1, 50)), producer("b", 2, capacity(90, 0)),
                producer("c", 3));
        assertEquals(List.of("a", "b", "c", "a", "b", "c"), draws(PickPolicy.named("round-robin", new Random(1)), c,
                IDLE, 6));
    }

    @Test
    void leastLoaded_prefersTheShortestQueue_thenTheMostFreeBlocks_andCountsThisRoutersLegsInFlight() {
        PickPolicy policy = PickPolicy.named("least-loaded", new Random(1));
        InstanceRecord busy = producer("a", 1, capacity(100, 3));
        InstanceRecord roomy = producer("b", 2, capacity(80, 0));
        InstanceRecord tight = producer("c", 3, capacity(10, 0));
        assertEquals(List.of("b", "b", "b"), draws(policy, List.of(busy, roomy, tight), IDLE, 3));
        // Two legs of this router under way to b make it busier than c, still less busy than a (queue 3).
        Load twoOnB = id -> id.equals("b") ? 2 : 0;
        assertEquals("c", policy.choose(List.of(busy, roomy, tight), twoOnB).engineId());
    }

    @Test
    void leastLoaded_equallyLoadedInstancesTakeTurns() {
        PickPolicy policy = PickPolicy.named("least-loaded", new Random(1));
        List<InstanceRecord> c = List.of(producer("a", 1), producer("b", 2), producer("c", 3, capacity(5, 1)));
        assertEquals(List.of("a", "b", "a", "b"), draws(policy, c, IDLE, 4));
    }

    @Test
    void powerOfTwo_neverPicksTheMostLoaded_andSpreadsOverTheRest() {
        PickPolicy policy = PickPolicy.named("power-of-two", new Random(42));
        List<InstanceRecord> c = List.of(producer("a", 1, capacity(50, 0)), producer("b", 2, capacity(50, 1)),
                producer("c", 3, capacity(50, 2)), producer("d", 4, capacity(50, 9)));
        Map<String, Integer> seen = new HashMap<>();
        for (String id : draws(policy, c, IDLE, 600)) {
            seen.merge(id, 1, Integer::sum);
        }
        assertEquals(null, seen.get("d"), "two distinct draws: the most loaded always loses: " + seen);
        assertTrue(seen.get("a") > seen.get("b") && seen.get("b") > seen.get("c") && seen.get("c") > 0, seen.toString());
    }

    @Test
    void powerOfTwo_withOneCandidate_takesIt() {
        assertEquals("a", PickPolicy.named("power-of-two", new Random(1)).choose(List.of(producer("a", 1)), IDLE)
                .engineId());
    }

    @Test
    void anUnknownPolicyNameIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> PickPolicy.named("random", new Random(1)));
        assertNotEquals(null, PickPolicy.named("least-loaded", new Random(1)));
    }
}
