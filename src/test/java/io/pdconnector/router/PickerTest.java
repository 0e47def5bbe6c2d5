package io.pdconnector.router;

import static io.pdconnector.router.Fleets.capacity;
import static io.pdconnector.router.Fleets.decoder;
import static io.pdconnector.router.Fleets.producer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.pdconnector.controlplane.InstanceRecord;
import io.pdconnector.error.UnavailableException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PickerTest {

    private static Picker picker(List<InstanceRecord> fleet) {
        return new Picker(() -> fleet, PickPolicy.named("round-robin", new Random(1)),
                PickPolicy.named("round-robin", new Random(1)), id -> 0);
    }

    private static List<String> picks(Picker picker, int n, Set<String> avoidP, Set<String> avoidD) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Pick p = picker.pick(avoidP, avoidD);
            out.add(p.producer().engineId() + ">" + p.decoder().engineId());
        }
        return out;
    }

    @Test
    void onlyReadyInstancesWithRoomInTheirRole_andPairsThatAreCompatible() {
        InstanceRecord p = producer("p", 1);
        InstanceRecord notReady = producer("p-unready", 2).with(InstanceRecord.Capacity.UNKNOWN, false, 0);
        InstanceRecord full = producer("p-full", 3, capacity(0, 0));
        InstanceRecord noSlots = producer("p-noslots", 4, new InstanceRecord.Capacity(9, 0, 0, 0));
        InstanceRecord unpublished = new InstanceRecord("p-unpublished", "producer", "127.0.0.1", 5, 1, "e",
                p.connectorVersion(), "hash", List.of(), null, true, 0); // its loop has not published its ranks
        InstanceRecord router = new InstanceRecord("r", "router", "127.0.0.1", 6, 1, "e", p.connectorVersion(),
                "hash", List.of(), null, true, 0);
        InstanceRecord otherModel = new InstanceRecord("p-other", "producer", "127.0.0.1", 7, 1, "e",
                p.connectorVersion(), "other-hash", p.ranks(), null, true, 0);
        InstanceRecord d = decoder("d", 8);
        InstanceRecord dFull = decoder("d-full", 9, capacity(0, 0));
        Picker picker = picker(List.of(p, notReady, full, noSlots, unpublished, router, otherModel, d, dFull));
        assertEquals(List.of("p>d", "p>d", "p>d"), picks(picker, 3, Set.of(), Set.of()));
    }

    @Test
    void aProducerIsPairedOnlyWithDecodersOfItsOwnHash() {
        InstanceRecord pa = producer("pa", 1);
        InstanceRecord pb = new InstanceRecord("pb", "producer", "127.0.0.1", 2, 1, "e", pa.connectorVersion(), "b",
                pa.ranks(), null, true, 0);
        InstanceRecord da = decoder("da", 3);
        InstanceRecord db = new InstanceRecord("db", "consumer", "127.0.0.1", 4, 1, "e", pa.connectorVersion(), "b",
                List.of(), null, true, 0);
        assertEquals(List.of("pa>da", "pb>db", "pa>da", "pb>db"), picks(picker(List.of(pa, pb, da, db)), 4, Set.of(),
                Set.of()));
    }

    @Test
    void avoidedInstancesAreSkippedWhileAnotherWillDo_elseTheSameIsTakenAgain() {
        List<InstanceRecord> fleet = List.of(producer("p1", 1), producer("p2", 2), decoder("d1", 3), decoder("d2", 4));
        assertEquals(List.of("p2>d2", "p2>d2"), picks(picker(fleet), 2, Set.of("p1"), Set.of("d1")));
        List<InstanceRecord> single = List.of(producer("p1", 1), decoder("d1", 3));
        assertEquals(List.of("p1>d1"), picks(picker(single), 1, Set.of("p1"), Set.of("d1")));
    }

    @Test
    void noPairAtAll_is503NoInstance() {
        UnavailableException e = assertThrows(UnavailableException.class,
                () -> picker(List.of(producer("p", 1))).pick(Set.of(), Set.of()));
        assertEquals("no-instance", e.reason());
        assertThrows(UnavailableException.class, () -> picker(List.of(decoder("d", 1))).pick(Set.of(), Set.of()));
    }
}
