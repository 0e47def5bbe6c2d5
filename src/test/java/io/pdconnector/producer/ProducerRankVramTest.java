package io.pdconnector.producer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.ProducerConfig;
import io.pdconnector.reference.ReferenceEngine;
import io.pdconnector.testing.Cluster;
import io.pdconnector.testing.DeviceMemoryEngine;
import io.pdconnector.testing.InProcessDirectory;
import io.pdconnector.transfer.KvInDeviceMemoryException;
import io.pdconnector.transfer.KvPools;
import io.pdconnector.transfer.PoolShare;
import io.pdconnector.transfer.loopback.LoopbackTransferEngine;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A prefill rank under pd.kv.memory=vram, with fake pools: its KV region is the pool its own agent
 * registered; the pool is released (deregistered, then freed) before the agent closes, once; the Java
 * paths that write KV bytes in host memory are refused and touch nothing; a reservation's blocks are
 * zeroed on the GPU; an agent that cannot register VRAM is refused, never given host memory instead.
 */
class ProducerRankVramTest {

    @TempDir
    Path dir;
    private final DeviceMemoryEngine engine = new DeviceMemoryEngine();

    private ProducerConfig config(int tp) {
        return ProducerConfig.builder("p", dir).geometry(Cluster.SMALL).tpSize(tp).blocks(4, 2, 0).build();
    }

    @Test
    void theRanksKvIsThePoolItsOwnAgentRegisteredAndItIsReleasedBeforeTheAgentCloses() {
        ProducerConfig config = config(1);
        ProducerRank rank = ProducerRank.open(engine, config, 0, Optional.of(engine.pools()));
        long bytes = config.numBlocks() * config.geometry().blockBytes(1);
        assertEquals(List.of("pool.open p-p0-kv", "p-p0.registerVram"), engine.events);
        assertEquals(0x7f00_0000_0000L, rank.metadata(config).kvBase(), "peers READ the pool's device address");
        assertEquals(bytes, rank.metadata(config).kvLength());
        assertTrue(rank.region().file().isEmpty(), "no KV file under vram");
        PoolShare share = rank.poolShare().orElseThrow();
        assertEquals(0, share.rank());
        assertEquals(bytes, share.bytes());

        engine.events.clear();
        rank.close();
        assertEquals(List.of("p-p0.deregisterVram", "pool.free p-p0-kv", "p-p0.close"), engine.events,
                "deregister, then free, then the agent: one release path");
        assertEquals(0, engine.registeredRegions());
    }

    @Test
    void hostPathsAreRefusedAndTouchNothing() {
        ProducerConfig config = config(1);
        ProducerRank rank = ProducerRank.open(engine, config, 0, Optional.of(engine.pools()));
        Lease lease = new Lease("x", new int[] {1, 3}, 8, 0, 7, 1);
        engine.events.clear();
        KvInDeviceMemoryException upload = assertThrows(KvInDeviceMemoryException.class,
                () -> rank.copyUpload(lease, new byte[Math.toIntExact(2 * rank.blockBytes())], 1));
        assertTrue(upload.getMessage().startsWith("a KV upload reads or writes KV bytes in host memory"),
                upload.getMessage());
        assertThrows(KvInDeviceMemoryException.class,
                () -> rank.writeKv(new ReferenceEngine(Cluster.SMALL), lease, new int[] {1, 2, 3}, 1));
        assertEquals(List.of(), engine.events, "nothing was written, registered or freed");

        rank.zeroBlocks(lease);
        long bb = rank.blockBytes();
        assertEquals(List.of("pool.zero p-p0-kv " + bb + "+" + bb, "pool.zero p-p0-kv " + 3 * bb + "+" + bb),
                engine.events, "a reservation's blocks are zeroed on the GPU");
        rank.close();
    }

    @Test
    void anAgentThatCannotRegisterVramIsRefusedAndClosedNeverGivenHostMemory() {
        LoopbackTransferEngine loopback = new LoopbackTransferEngine();
        KvPools never = (agent, rank, label, bytes) -> {
            throw new AssertionError("no pool may be asked for an agent that cannot register it");
        };
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> ProducerRank.open(loopback, config(1), 0, Optional.of(never)));
        assertTrue(e.getMessage().contains("cannot register GPU memory"), e.getMessage());
        loopback.close();
    }

    @Test
    void aPoolThatFailsLeavesTheAgentClosedAndNothingRegistered() {
        RuntimeException refused = new IllegalStateException("cuMemAlloc_v2 failed");
        engine.failNextPool = refused;
        assertSame(refused, assertThrows(IllegalStateException.class,
                () -> ProducerRank.open(engine, config(1), 0, Optional.of(engine.pools()))));
        assertEquals(0, engine.registeredRegions());
        assertEquals("p-p0.close", engine.events.getLast());
    }

    @Test
    void theSchedulerPublishesEachRanksPoolWhileOpenAndReleasesThemAtClose() {
        LeaseScheduler scheduler = new LeaseScheduler(config(2), engine, new InProcessDirectory(),
                InstantSource.system(), LeaseObserver.NONE, Optional.of(engine.pools()));
        assertEquals(List.of(), scheduler.poolShares(), "no pool before the loop opens");
        scheduler.open();
        assertEquals(List.of(0, 1), scheduler.poolShares().stream().map(PoolShare::rank).toList());
        assertEquals(2, engine.registeredRegions());

        scheduler.close();
        assertEquals(List.of(), scheduler.poolShares(), "a closed loop shares no pool");
        assertEquals(0, engine.registeredRegions());
        List<String> tail = engine.events.subList(engine.events.size() - 6, engine.events.size());
        assertEquals(List.of("p-p0.deregisterVram", "pool.free p-p0-kv", "p-p0.close",
                "p-p1.deregisterVram", "pool.free p-p1-kv", "p-p1.close"), tail);
        assertTrue(engine.events.stream().noneMatch(s -> s.startsWith("pool.close again")), "each pool closed once");
    }

    @Test
    void dramRanksHaveNoPoolToShare() {
        LoopbackTransferEngine loopback = new LoopbackTransferEngine();
        ProducerRank rank = ProducerRank.open(loopback, config(1), 0);
        assertEquals(Optional.empty(), rank.poolShare());
        rank.close();
        loopback.close();
    }
}
