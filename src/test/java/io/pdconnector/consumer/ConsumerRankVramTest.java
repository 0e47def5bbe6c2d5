package io.pdconnector.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.reference.ReferenceEngine;
import io.pdconnector.testing.Cluster;
import io.pdconnector.testing.DeviceMemoryEngine;
import io.pdconnector.testing.InProcessDirectory;
import io.pdconnector.transfer.KvInDeviceMemoryException;
import io.pdconnector.transfer.PoolShare;
import java.time.InstantSource;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * A decode rank under pd.kv.memory=vram, with fake pools: the pull lands in the pool its own agent
 * registered; the pool is released (deregistered, then freed) before the agent closes; recompute, the
 * read-out, checksums and the reference check are refused before they read anything.
 */
class ConsumerRankVramTest {

    private final DeviceMemoryEngine engine = new DeviceMemoryEngine();

    private ConsumerConfig config(int tp) {
        return ConsumerConfig.builder("d").geometry(Cluster.SMALL).tpSize(tp).blocks(4).build();
    }

    @Test
    void theRanksKvIsItsPoolAndItIsReleasedBeforeTheAgentCloses() {
        ConsumerConfig config = config(1);
        ConsumerRank rank = ConsumerRank.open(engine, config, 0, Optional.of(engine.pools()));
        assertEquals(List.of("pool.open d-d0-kv", "d-d0.registerVram"), engine.events);
        assertEquals(0x7f00_0000_0000L, rank.kv().address(), "pulls land at the pool's device address");
        assertTrue(rank.region().file().isEmpty(), "no KV file under vram");
        assertEquals(config.numBlocks() * config.geometry().blockBytes(1), rank.poolShare().orElseThrow().bytes());

        engine.events.clear();
        rank.close();
        assertEquals(List.of("d-d0.deregisterVram", "pool.free d-d0-kv", "d-d0.close"), engine.events);
    }

    @Test
    void javaPathsOverHostBytesAreRefusedBeforeReadingAnything() {
        ConsumerRank rank = ConsumerRank.open(engine, config(1), 0, Optional.of(engine.pools()));
        KvInDeviceMemoryException recompute = assertThrows(KvInDeviceMemoryException.class,
                () -> rank.recompute(new ReferenceEngine(Cluster.SMALL), new int[] {0}, new int[] {1, 2}, 1));
        assertTrue(recompute.getMessage().startsWith("the reference engine's recompute reads or writes KV bytes"),
                recompute.getMessage());
        PulledKv kv = new PulledKv(List.of(rank.kv()), List.of(rank.region()), new int[] {0, 1}, new int[] {1, 2},
                64, 0);
        assertTrue(kv.pin());
        assertThrows(KvInDeviceMemoryException.class, kv::crc32c);
        assertThrows(KvInDeviceMemoryException.class, kv::copy);
        assertThrows(KvInDeviceMemoryException.class, () -> kv.matches(new ReferenceEngine(Cluster.SMALL)));
        kv.unpin();
        assertTrue(kv.retire(), "a refused read left no pin behind");
        rank.close();
    }

    @Test
    void theSchedulerPublishesItsRanksPoolsWhileOpen() {
        PullScheduler scheduler = new PullScheduler(config(2), engine, new InProcessDirectory(),
                InstantSource.system(), PullObserver.NONE, Optional.of(engine.pools()));
        scheduler.open();
        assertEquals(List.of(0, 1), scheduler.poolShares().stream().map(PoolShare::rank).toList());
        scheduler.close();
        assertEquals(List.of(), scheduler.poolShares());
        assertEquals(0, engine.registeredRegions(), "every pool deregistered at close");
        assertFalse(engine.events.stream().anyMatch(s -> s.startsWith("pool.close again")));
    }
}
