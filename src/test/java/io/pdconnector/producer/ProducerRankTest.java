package io.pdconnector.producer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.ProducerConfig;
import io.pdconnector.memory.SlotArray;
import io.pdconnector.testing.Cluster;
import io.pdconnector.transfer.loopback.LoopbackTransferEngine;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ProducerRankTest {

    @TempDir
    Path dir;
    private final LoopbackTransferEngine engine = new LoopbackTransferEngine();
    private ProducerRank rank;

    private ProducerRank open() {
        ProducerConfig config = ProducerConfig.builder("p", dir).geometry(Cluster.SMALL).blocks(4, 2, 0).build();
        rank = ProducerRank.open(engine, config, 0);
        return rank;
    }

    @AfterEach
    void close() {
        if (rank != null) {
            rank.close();
            assertEquals(0, rank.openHandles(), "the rank released its regions");
        }
    }

    @Test
    void L2_clearsApplyBeforeWritesWithinAStep() {
        ProducerRank r = open();
        Lease old = new Lease("old", new int[] {0}, 1, 2, 11, 1);
        Lease fresh = new Lease("fresh", new int[] {1}, 1, 2, 12, 1);
        r.queueWrite(old);
        r.applySlotOps(l -> { });
        old.beginRankExit(0);
        r.queueWrite(fresh);
        r.queueClear(old);

        r.applySlotOps(l -> { });

        assertEquals(12, r.slotValue(2), "the write queued in the same step as the clear survives it");
    }

    @Test
    void L3_rankReportsFinishedSendingOnlyAfterItsSlotReadsZero() {
        ProducerRank r = open();
        Lease lease = new Lease("x", new int[] {0}, 1, 1, 99, 1);
        r.queueWrite(lease);
        r.applySlotOps(l -> { });
        assertEquals(99, r.slotValue(1));
        lease.beginRankExit(0);
        r.queueClear(lease);
        List<Long> slotAtReport = new ArrayList<>();

        r.applySlotOps(l -> slotAtReport.add(r.slotValue(l.slot())));

        assertEquals(List.of(0L), slotAtReport, "finished-sending was reported with the slot already zero");
        assertEquals(RankHold.FINISHED, lease.rank(0));
    }

    @Test
    void L10_slotRegistrationFailureExplainsHowToRunUnverified() {
        var failing = new io.pdconnector.testing.RecordingEngine();
        failing.refuseRegionLabel = SlotArray.LABEL;
        ProducerConfig config = ProducerConfig.builder("p", dir).geometry(Cluster.SMALL).blocks(4, 2, 0).build();
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> ProducerRank.open(failing, config, 0));
        assertTrue(e.getMessage().contains("kv_lease_verification=false"), e.getMessage());
    }
}
