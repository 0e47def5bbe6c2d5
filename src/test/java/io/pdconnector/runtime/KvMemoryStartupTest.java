package io.pdconnector.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.KvMemory;
import io.pdconnector.config.PdConfig;
import io.pdconnector.config.PdConfigs;
import io.pdconnector.cuda.GpuSelector;
import io.pdconnector.cuda.VramStartupException;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferEngine;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** pd.kv.memory at start-up: dram touches nothing; vram's configuration is refused, sentence by sentence. */
class KvMemoryStartupTest {

    private static final String A = "GPU-1f2e3d4c-0000-4000-8000-00000000000a";
    private static final String B = "GPU-1f2e3d4c-0000-4000-8000-00000000000b";

    /** An engine that fails the test if anything asks it for an agent. */
    private static final TransferEngine UNTOUCHED = new TransferEngine() {
        public String kind() { throw new AssertionError("the transfer engine was touched"); }
        public TransferAgent createAgent(String name) { throw new AssertionError("an agent was made"); }
        public void close() { }
    };

    private static PdConfig config(String... keyValues) {
        Map<String, String> keys = new HashMap<>();
        for (int i = 0; i < keyValues.length; i += 2) {
            keys.put(keyValues[i], keyValues[i + 1]);
        }
        return PdConfigs.from(keys);
    }

    @Test
    void dramIsTheDefaultAndDoesNothing() {
        PdConfig c = config();
        assertEquals(KvMemory.dram, c.kv().memory());
        assertTrue(c.kv().gpuUuid().isEmpty());
        new KvMemoryStartup().check(null, c, UNTOUCHED);
    }

    @Test
    void aRouterIgnoresVram() {
        new KvMemoryStartup().check(null, config("pd.role", "router", "pd.kv.memory", "vram"), UNTOUCHED);
    }

    @Test
    void oneUuidPerRankInRankOrder() {
        List<GpuSelector> ranks = KvMemoryStartup.ranks(config("pd.kv.memory", "vram", "pd.tp-size", "2",
                "pd.model.kv-heads", "2", "pd.kv.gpu-uuid", B + "," + A));
        assertEquals(List.of(GpuSelector.parse(B), GpuSelector.parse(A)), ranks);
        assertEquals(List.of(new GpuSelector.SoleVisible()),
                KvMemoryStartup.ranks(config("pd.kv.memory", "vram", "pd.kv.gpu-uuid", "sole-visible")));
    }

    @Test
    void aMissingOrMisSizedGpuListIsRefusedNamingTheKeys() {
        assertRefused("pd.kv.memory=vram needs pd.kv.gpu-uuid: the engine's GPU for each of the 1 TP ranks",
                "pd.kv.memory", "vram");
        assertRefused("pd.kv.gpu-uuid lists 1 GPUs, pd.tp-size is 2: one GPU UUID per TP rank",
                "pd.kv.memory", "vram", "pd.tp-size", "2", "pd.kv.gpu-uuid", A);
        assertRefused("pd.kv.gpu-uuid=sole-visible is for pd.tp-size=1 alone",
                "pd.kv.memory", "vram", "pd.tp-size", "2", "pd.kv.gpu-uuid", "sole-visible,sole-visible");
        assertRefused("pd.kv.gpu-uuid names a GPU twice",
                "pd.kv.memory", "vram", "pd.tp-size", "2", "pd.kv.gpu-uuid", A + "," + A);
        assertRefused("pd.kv.memory=vram needs pd.transfer.engine=nixl",
                "pd.kv.memory", "vram", "pd.transfer.engine", "loopback", "pd.kv.gpu-uuid", A);
    }

    @Test
    void aGpuUuidThatIsNoUuidIsRefusedNamingTheKey() {
        // (the service's validator refuses it earlier, by the key's @Pattern; this is the check behind it)
        assertRefused("pd.kv.gpu-uuid: not a GPU UUID as nvidia-smi -L prints one", "pd.kv.memory", "vram",
                "pd.kv.gpu-uuid", "0");
    }

    @Test
    void bothSidesInOneInstanceOrRecomputeAreRefusedBeforeAnyGpuIsTouched() {
        VramStartupException both = assertThrows(VramStartupException.class, () -> new KvMemoryStartup().check(null,
                config("pd.kv.memory", "vram", "pd.kv.gpu-uuid", A), UNTOUCHED));
        assertTrue(both.getMessage().startsWith("pd.kv.memory=vram serves one side per instance"), both.getMessage());
        VramStartupException recompute = assertThrows(VramStartupException.class, () -> new KvMemoryStartup().check(
                null, config("pd.role", "consumer", "pd.kv.memory", "vram", "pd.kv.gpu-uuid", A,
                        "pd.consumer.failure-policy", "recompute"), UNTOUCHED));
        assertTrue(recompute.getMessage().startsWith("pd.kv.memory=vram cannot recompute into D's KV"),
                recompute.getMessage());
    }

    @Test
    void aDecoderWhoseEnvironmentTakesUcxsProtocolReportIsRefusedUnlessHostPathsAreAllowed() {
        PdConfig d = config("pd.role", "consumer", "pd.kv.memory", "vram", "pd.kv.gpu-uuid", A);
        VramStartupException e = assertThrows(VramStartupException.class,
                () -> KvMemoryStartup.requireTransportReport(d, java.util.Map.of("UCX_LOG_FILE", "/var/log/ucx.log")));
        assertTrue(e.getMessage().contains("the environment sets UCX_LOG_FILE=/var/log/ucx.log: unset it, or set"
                + " pd.kv.vram-host-path=allow"), e.getMessage());
        assertThrows(VramStartupException.class,
                () -> KvMemoryStartup.requireTransportReport(d, java.util.Map.of("UCX_PROTO_INFO", "y")));

        KvMemoryStartup.requireTransportReport(d, java.util.Map.of("UCX_TLS", "all"));
        KvMemoryStartup.requireTransportReport(config("pd.role", "consumer", "pd.kv.memory", "vram",
                "pd.kv.gpu-uuid", A, "pd.kv.vram-host-path", "allow"), java.util.Map.of("UCX_LOG_FILE", "/x"));
        KvMemoryStartup.requireTransportReport(config("pd.role", "producer", "pd.kv.memory", "vram",
                "pd.kv.gpu-uuid", A), java.util.Map.of("UCX_LOG_FILE", "/x"));
    }

    private static void assertRefused(String start, String... keyValues) {
        VramStartupException e = assertThrows(VramStartupException.class, () -> KvMemoryStartup.ranks(config(keyValues)));
        assertTrue(e.getMessage().startsWith(start), e.getMessage());
    }
}
