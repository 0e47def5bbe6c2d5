package io.pdconnector.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.kv.KvAttention;
import io.pdconnector.kv.KvDtype;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.loop.StepLoop;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The mapping from {@code pd.*} to the settings records, without booting Quarkus: every key reaches
 * its setting, and the builders' defaults are {@link PdConfig}'s (so tests and the service agree).
 */
class ConnectorSettingsTest {

    private static PdConfig pd(Map<String, String> keys) {
        return PdConfigs.from(keys);
    }

    @Test
    void theBuildersDefaultsAreTheKeysDefaults() {
        ConnectorSettings s = ConnectorSettings.from(pd(Map.of()), 8080);

        assertEquals(ModelGeometry.DEFAULT, s.geometry());
        assertEquals(ProducerConfig.builder("pd-local", Path.of(".cache/pd-state"))
                .kvShmDir(Path.of("/dev/shm")).build(), s.producer(), "only the KV file directory differs");
        assertEquals(ConsumerConfig.builder("pd-local").kvShmDir(Path.of("/dev/shm")).build(), s.consumer(),
                "only the KV file directory differs");
        assertEquals(new LoopSettings(Duration.ofSeconds(60), Duration.ofSeconds(10), Duration.ofMillis(1),
                Duration.ofMillis(10), Duration.ofSeconds(10)), s.loop());
        assertEquals(StepLoop.DEFAULT_MAX_IDLE_PARK, s.loop().maxIdlePark());
        assertEquals(StepLoop.DEFAULT_STOP_DEADLINE, s.loop().stopDeadline());
    }

    @Test
    void aKvDtypeNameOfAnotherWidthThanDtypeBytesStopsTheStartSayingBoth() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ConnectorSettings.from(pd(Map.of("pd.model.kv-dtype", "fp8_e4m3")), 8080));
        assertEquals("the KV dtype fp8_e4m3 is 1 bytes, not the 2 the geometry says", e.getMessage());
        assertEquals(new ModelGeometry(24, 2, 64, 16, 1, KvDtype.FP8_E4M3), ConnectorSettings.from(pd(Map.of(
                "pd.model.kv-dtype", "fp8_e4m3", "pd.model.dtype-bytes", "1")), 8080).geometry());
    }

    @Test
    void kvScalesNeedAnFp8CacheAndUnitIsTheSameAsUnset() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ConnectorSettings.from(pd(Map.of("pd.model.kv-scales", "0123456789abcdef")), 8080));
        assertTrue(e.getMessage().contains("belong to a quantized cache") && e.getMessage().contains("unnamed"),
                e.getMessage());
        Map<String, String> fp8 = Map.of("pd.model.kv-dtype", "fp8_e4m3", "pd.model.dtype-bytes", "1");
        ModelGeometry unset = ConnectorSettings.from(pd(fp8), 8080).geometry();
        java.util.Map<String, String> unit = new java.util.HashMap<>(fp8);
        unit.put("pd.model.kv-scales", "unit");
        assertEquals(unset, ConnectorSettings.from(pd(unit), 8080).geometry());
        unit.put("pd.model.kv-scales", "0123456789abcdef");
        assertEquals("0123456789abcdef", ConnectorSettings.from(pd(unit), 8080).geometry().kvScales());
    }

    @Test
    void mlaNeedsOneLatentHeadAndGivesTheProducerOneRankAtAnyTp() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ConnectorSettings.from(pd(Map.of("pd.model.attention", "mla")), 8080));
        assertTrue(e.getMessage().contains("kv-heads must be 1"), e.getMessage());
        ConnectorSettings s = ConnectorSettings.from(pd(Map.of("pd.model.attention", "mla", "pd.model.kv-heads", "1",
                "pd.model.head-dim", "576", "pd.tp-size", "4")), 8080);
        assertEquals(KvAttention.MLA, s.geometry().attention());
        assertEquals(1, s.producer().tpSize(), "P holds MLA's latent on one rank");
        assertEquals(4, s.consumer().tpSize(), "each of D's ranks holds the latent");
        assertEquals(KvAttention.MHA, ConnectorSettings.from(pd(Map.of()), 8080).geometry().attention());
    }

    @Test
    void everyKeyReachesItsSettingByName() {
        ConnectorSettings s = ConnectorSettings.from(pd(Map.ofEntries(
                Map.entry("pd.engine-id", "p1"),
                Map.entry("pd.advertised-host", "10.0.0.7"),
                Map.entry("pd.tp-size", "2"),
                Map.entry("pd.model.layers", "4"),
                Map.entry("pd.model.kv-heads", "8"),
                Map.entry("pd.model.head-dim", "32"),
                Map.entry("pd.model.block-tokens", "8"),
                Map.entry("pd.model.dtype-bytes", "4"),
                Map.entry("pd.model.kv-dtype", "float32"),
                Map.entry("pd.kv.num-blocks", "100"),
                Map.entry("pd.kv.max-num-seqs", "9"),
                Map.entry("pd.kv.shm-dir", "/tmp/kv"),
                Map.entry("pd.lease.duration", "12s"),
                Map.entry("pd.lease.verification", "false"),
                Map.entry("pd.lease.slots", "7"),
                Map.entry("pd.lease.reservation-timeout", "3m"),
                Map.entry("pd.lease.max-lifetime", "4m"),
                Map.entry("pd.lease.state-dir", "/tmp/state"),
                Map.entry("pd.consumer.failure-policy", "recompute"),
                Map.entry("pd.consumer.pull-timeout", "45s"),
                Map.entry("pd.consumer.retention", "90s"),
                Map.entry("pd.consumer.slot-read-spins", "11"),
                Map.entry("pd.consumer.slot-checks-per-read", "5"),
                Map.entry("pd.consumer.max-peer-blocks", "1000"),
                Map.entry("pd.consumer.max-peer-descriptors", "2000"),
                Map.entry("pd.http.queue-capacity", "33"),
                Map.entry("pd.loop.open-deadline", "2m"),
                Map.entry("pd.loop.stop-deadline", "3s"),
                Map.entry("pd.loop.max-idle-park", "250ms"),
                Map.entry("pd.loop.producer-idle-park", "40ms"),
                Map.entry("pd.loop.stall-threshold", "20s"))), 9090);

        ModelGeometry g = new ModelGeometry(4, 8, 32, 8, 4, KvDtype.FLOAT32);
        assertEquals(g, s.geometry());
        assertEquals(ProducerConfig.builder("p1", Path.of("/tmp/state")).advertised("10.0.0.7", 9090).tpSize(2)
                .geometry(g).blocks(100, 9, 7).kvShmDir(Path.of("/tmp/kv")).leaseDuration(Duration.ofSeconds(12))
                .verification(false).reservationTimeout(Duration.ofMinutes(3)).leaseMaxLifetime(Duration.ofMinutes(4))
                .commandQueueCapacity(33).build(),
                s.producer());
        assertEquals(ConsumerConfig.builder("p1").tpSize(2).geometry(g).blocks(100).verification(false)
                .failurePolicy(LoadFailurePolicy.RECOMPUTE).heartbeatInterval(Duration.ofSeconds(2))
                .pullTimeout(Duration.ofSeconds(45)).retention(Duration.ofSeconds(90)).slotReadSpins(11)
                .slotChecksPerRead(5).maxPeerBlocks(1000)
                .maxPeerDescriptors(2000).commandQueueCapacity(33).kvShmDir(Path.of("/tmp/kv"))
                .build(), s.consumer(), "the heartbeat defaults to lease / 6");
        assertEquals(new LoopSettings(Duration.ofMinutes(2), Duration.ofSeconds(3), Duration.ofMillis(250),
                Duration.ofMillis(40), Duration.ofSeconds(20)), s.loop());
    }

    @Test
    void anAdvertisedPortAndAHeartbeatIntervalOverrideTheirFallbacks() {
        ConnectorSettings s = ConnectorSettings.from(pd(Map.of("pd.advertised-port", "7000",
                "pd.consumer.heartbeat-interval", "1500ms")), 9090);

        assertEquals(7000, s.producer().port());
        assertEquals(Duration.ofMillis(1500), s.consumer().heartbeatInterval());
    }

    @Test
    void aMaximumLeaseLifetimeShorterThanTheLeaseFailsWhenTheSettingsAreBuilt() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ConnectorSettings.from(pd(Map.of("pd.lease.duration", "30s", "pd.lease.max-lifetime", "20s")),
                        8080));

        assertEquals("a lease's maximum lifetime (PT20S) must not be shorter than the lease (PT30S)", e.getMessage());
    }

    @Test
    void aTpSizeThatDoesNotDivideTheKvHeadsFailsWhenTheSettingsAreBuilt() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ConnectorSettings.from(pd(Map.of("pd.tp-size", "4")), 8080));

        assertEquals("tensor-parallel size 4 does not divide the model's 2 KV heads", e.getMessage());
    }
}
