package io.pdconnector.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

class KvTransferParamsTest {

    private static String rejection(Consumer<Map<String, Object>> edit) {
        Map<String, Object> m = ProtocolGenerators.validMap();
        edit.accept(m);
        return assertThrows(InvalidKvTransferParamsException.class,
                () -> KvTransferParams.fromMap(m).validateForPull()).getMessage();
    }

    @Test
    void roundTripsVllmFieldNamesAndKeepsUnknownFields() {
        Map<String, Object> m = ProtocolGenerators.validMap();
        m.put("router_hint", "keep-me");

        KvTransferParams p = KvTransferParams.fromMap(m).validateForPull();

        assertEquals((1L << 53) - 1, p.remoteLeaseNonce());
        assertEquals("keep-me", p.extra().get("router_hint"));
        Map<String, Object> out = p.toMap();
        assertEquals("keep-me", out.get("router_hint"));
        assertEquals(List.of(List.of(3, 4)), out.get("remote_block_ids"));
        assertEquals(5, out.get("remote_lease_slot"));
    }

    @Test
    void badParamsAreRejectedWithAMessageNamingTheField() {
        assertTrue(rejection(m -> m.remove("remote_engine_id")).contains("remote_engine_id"));
        assertTrue(rejection(m -> m.remove("remote_block_ids")).contains("remote_block_ids"));
        assertTrue(rejection(m -> m.put("remote_block_ids", List.of(List.of(1, -2)))).contains("negative"));
        assertTrue(rejection(m -> m.put("remote_block_ids", List.of(List.of("x")))).contains("integer"));
        assertTrue(rejection(m -> m.put("remote_lease_nonce", 0)).contains("remote_lease_nonce"));
        assertTrue(rejection(m -> m.put("remote_lease_nonce", 1L << 53)).contains("2^53"));
        assertTrue(rejection(m -> m.remove("remote_lease_slot")).contains("together"));
        assertTrue(rejection(m -> m.put("remote_lease_slot", -1)).contains("negative"));
        assertTrue(rejection(m -> m.put("remote_num_tokens", Integer.MAX_VALUE)).contains("remote_num_tokens"));
        assertTrue(rejection(m -> m.put("tp_size", 0)).contains("tp_size"));
        assertTrue(rejection(m -> m.put("transfer_mode", "push")).contains("transfer_mode"));
        assertTrue(rejection(m -> m.put("remote_request_id", "a:b")).contains("remote_request_id"));
        assertTrue(rejection(m -> m.put("do_remote_prefill", "yes")).contains("boolean"));
        assertTrue(rejection(m -> m.put("remote_port", 1.5)).contains("integer"));
    }

    @Test
    void paramsWithoutLeaseFieldsAreValidButCarryNoLease() {
        Map<String, Object> m = ProtocolGenerators.validMap();
        m.remove("remote_lease_slot");
        m.remove("remote_lease_nonce");

        KvTransferParams p = KvTransferParams.fromMap(m).validateForPull();

        assertTrue(!p.hasLease() && !p.toMap().containsKey("remote_lease_slot"));
    }
}
