package io.pdconnector.api.problem;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.PdConfig;
import io.pdconnector.config.PdConfigs;
import io.pdconnector.transfer.KvInDeviceMemoryException;
import jakarta.ws.rs.core.Response;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Under pd.kv.memory=vram the API's host-memory KV paths answer 409 kv-in-gpu-memory with one sentence
 * naming the path (the resources call this before their facade, so nothing reaches a loop); with dram
 * they pass. A refusal that a loop raised maps to the same answer, never a 500.
 */
class HostKvTest {

    private static PdConfig config(String memory) {
        return PdConfigs.from(Map.of("pd.role", "producer", "pd.kv.memory", memory,
                "pd.kv.gpu-uuid", "sole-visible"));
    }

    @Test
    void vramRefusesWithTheReasonAndOneSentenceNamingThePath() {
        ProblemException e = assertThrows(ProblemException.class,
                () -> HostKv.require(config("vram"), "a KV upload"));
        Problem p = e.problem();
        assertEquals(409, p.status());
        assertEquals("urn:pd-connector:problem:kv-in-gpu-memory", p.type());
        assertTrue(p.detail().startsWith("a KV upload reads or writes KV bytes in host memory, but with "
                + "pd.kv.memory=vram this instance keeps its KV in GPU memory"), p.detail());
        assertEquals(1, p.detail().split("\\. ").length, "one sentence");
    }

    @Test
    void dramPasses() {
        HostKv.require(config("dram"), "a KV upload");
    }

    @Test
    void aRefusalFromALoopIsTheSame409() {
        Response r = new ProblemMappers().kvInGpuMemory(new KvInDeviceMemoryException("a KV read-out"), null);
        assertEquals(409, r.getStatus());
        Problem p = (Problem) r.getEntity();
        assertEquals("urn:pd-connector:problem:kv-in-gpu-memory", p.type());
        assertTrue(p.detail().startsWith("a KV read-out reads or writes"), p.detail());
    }
}
