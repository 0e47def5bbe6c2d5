package io.pdconnector.api.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.pdconnector.config.KvMemory;
import io.pdconnector.testing.Cluster;
import io.pdconnector.transfer.PoolShare;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * /v1/kv-layout's {@code pools} (docs/gpu.md): one entry per rank with exactly rank, gpu_uuid, bytes,
 * ipc_handle (the 64 bytes, base64) and incarnation; only under vram and only for the engine; absent, not
 * empty, otherwise, without the pools even being asked for.
 */
class KvLayoutPoolsTest {

    private final ObjectMapper json = new ObjectMapper();
    private final KvLayoutResponse layout = KvLayoutResponse.of("e", "producer", 2, 8, Cluster.SMALL, true);

    private static PoolShare share(int rank) {
        byte[] handle = new byte[64];
        for (int i = 0; i < handle.length; i++) {
            handle[i] = (byte) (i * 3 + rank);
        }
        return new PoolShare(rank, "GPU-0000000" + rank + "-0000-4000-8000-000000000000", 1L << 30, handle,
                (1L << 52) + rank);
    }

    @Test
    void theEngineSeesOneEntryPerRankWithTheDesignedFields() throws Exception {
        List<PoolShare> shares = List.of(share(0), share(1));
        JsonNode body = json.valueToTree(KvLayoutResource.forCaller(layout, KvMemory.vram, true, () -> shares));
        JsonNode pools = body.get("pools");
        assertEquals(2, pools.size());
        List<String> keys = new ArrayList<>();
        pools.get(1).fieldNames().forEachRemaining(keys::add);
        assertEquals(List.of("rank", "gpu_uuid", "bytes", "ipc_handle", "incarnation"), keys);
        assertEquals(1, pools.get(1).get("rank").asInt());
        assertEquals(shares.get(1).gpuUuid(), pools.get(1).get("gpu_uuid").asText());
        assertEquals(1L << 30, pools.get(1).get("bytes").asLong());
        assertEquals((1L << 52) + 1, pools.get(1).get("incarnation").asLong());
        assertArrayEquals(shares.get(1).ipcHandle(),
                Base64.getDecoder().decode(pools.get(1).get("ipc_handle").asText()));
        assertEquals("e", body.get("engine_id").asText(), "the layout itself unchanged");
    }

    @Test
    void noPoolsKeyWithDramOrForTheOperator() {
        JsonNode dram = json.valueToTree(KvLayoutResource.forCaller(layout, KvMemory.dram, true, () -> {
            throw new AssertionError("dram never asks for pools");
        }));
        assertFalse(dram.has("pools"));
        JsonNode operator = json.valueToTree(KvLayoutResource.forCaller(layout, KvMemory.vram, false, () -> {
            throw new AssertionError("the operator's token never sees an IPC handle");
        }));
        assertFalse(operator.has("pools"));
        assertEquals(json.valueToTree(layout), dram, "with dram the answer is today's, byte for byte");
    }
}
