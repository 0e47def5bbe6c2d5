package io.pdconnector.protocol;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What P hands back and D receives, with the field names of vLLM's NIXL connector so routers
 * forward it unchanged. Unknown fields are kept in {@code extra} and written back out. The lease
 * fields are null when P had no free slot (L4) or runs unverified.
 */
public record KvTransferParams(
        boolean doRemotePrefill,
        boolean doRemoteDecode,
        String remoteEngineId,
        String remoteRequestId,
        List<List<Integer>> remoteBlockIds,
        String remoteHost,
        int remotePort,
        int tpSize,
        int remoteNumTokens,
        String transferMode,
        Integer remoteLeaseSlot,
        Long remoteLeaseNonce,
        Map<String, Object> extra) {

    public static final String PULL = "pull";
    /** Far above any real prompt (4M tokens); guards allocations sized from a peer's numbers. */
    public static final int MAX_TOKENS = 1 << 22;
    public static final int MAX_TP = 1024;

    private static final Set<String> KNOWN = Set.of("do_remote_prefill", "do_remote_decode", "remote_engine_id",
            "remote_request_id", "remote_block_ids", "remote_host", "remote_port", "tp_size", "remote_num_tokens",
            "transfer_mode", "remote_lease_slot", "remote_lease_nonce");

    public KvTransferParams {
        remoteBlockIds = remoteBlockIds == null ? null : remoteBlockIds.stream().map(List::copyOf).toList();
        // Not Map.copyOf: an unknown field may be JSON null, and is kept and written back as such.
        extra = extra == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(extra));
    }

    public boolean hasLease() {
        return remoteLeaseSlot != null && remoteLeaseNonce != null;
    }

    /** The block ids of the one KV-cache group this connector moves (a new array; callers keep it). */
    public int[] blockIds() {
        List<Integer> group = remoteBlockIds.getFirst();
        int[] ids = new int[group.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = group.get(i);
        }
        return ids;
    }

    /**
     * A pull with nothing to READ: the decoder's own prefix cache holds the whole prompt, so it
     * forwards {@code remote_block_ids: [[]]} (vLLM PR #56640). Its lease is still checked and P
     * still notified.
     */
    public boolean readsNoBlocks() {
        return remoteBlockIds.getFirst().isEmpty();
    }

    /**
     * Checks everything that can be checked without knowing the peer; throws a clear
     * {@link InvalidKvTransferParamsException} naming the first problem.
     */
    public KvTransferParams validateForPull() {
        require(doRemotePrefill, "do_remote_prefill must be true for a pull");
        require(remoteEngineId != null && !remoteEngineId.isBlank(), "remote_engine_id is missing");
        require(RequestIds.isValid(remoteRequestId),
                "remote_request_id is missing or not a valid request id: " + remoteRequestId);
        require(transferMode == null || PULL.equals(transferMode),
                "transfer_mode must be \"pull\", got \"" + transferMode + "\"");
        require(tpSize >= 1 && tpSize <= MAX_TP, "tp_size must be in [1, " + MAX_TP + "], got " + tpSize);
        require(remoteNumTokens >= 1 && remoteNumTokens <= MAX_TOKENS,
                "remote_num_tokens must be in [1, " + MAX_TOKENS + "], got " + remoteNumTokens);
        validateBlocks();
        validateLease();
        return this;
    }

    private void validateBlocks() {
        require(remoteBlockIds != null && !remoteBlockIds.isEmpty(), "remote_block_ids is missing or empty");
        require(remoteBlockIds.size() == 1,
                "remote_block_ids must hold exactly one KV-cache group, got " + remoteBlockIds.size());
        List<Integer> group = remoteBlockIds.getFirst();
        require(group.size() <= MAX_TOKENS, "remote_block_ids[0] has an absurd " + group.size() + " entries");
        for (Integer b : group) {
            require(b != null && b >= 0, "remote_block_ids must not hold negative or null ids, got " + b);
        }
    }

    private void validateLease() {
        require((remoteLeaseSlot == null) == (remoteLeaseNonce == null),
                "remote_lease_slot and remote_lease_nonce come together or not at all");
        if (hasLease()) {
            require(remoteLeaseSlot >= 0, "remote_lease_slot must not be negative, got " + remoteLeaseSlot);
            require(Nonces.isValid(remoteLeaseNonce),
                    "remote_lease_nonce must be in [1, 2^53), got " + remoteLeaseNonce);
        }
    }

    public Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>(extra);
        m.put("do_remote_prefill", doRemotePrefill);
        m.put("do_remote_decode", doRemoteDecode);
        m.put("remote_engine_id", remoteEngineId);
        m.put("remote_request_id", remoteRequestId);
        m.put("remote_block_ids", remoteBlockIds);
        m.put("remote_host", remoteHost);
        m.put("remote_port", remotePort);
        m.put("tp_size", tpSize);
        m.put("remote_num_tokens", remoteNumTokens);
        m.put("transfer_mode", transferMode);
        if (hasLease()) {
            m.put("remote_lease_slot", remoteLeaseSlot);
            m.put("remote_lease_nonce", remoteLeaseNonce);
        }
        return m;
    }

    /** Reads parsed JSON; wrong types become a clear exception, unknown fields go to {@code extra}. */
    public static KvTransferParams fromMap(Map<String, ?> m) {
        if (m == null) {
            throw new InvalidKvTransferParamsException("kv_transfer_params is missing");
        }
        Map<String, Object> extra = new LinkedHashMap<>();
        m.forEach((k, v) -> {
            require(k != null, "a field has no name");
            if (!KNOWN.contains(k)) {
                extra.put(k, v);
            }
        });
        Long slot = optionalLong(m, "remote_lease_slot");
        require(slot == null || slot >= Integer.MIN_VALUE && slot <= Integer.MAX_VALUE,
                "remote_lease_slot is out of range: " + slot);
        return new KvTransferParams(bool(m, "do_remote_prefill"), bool(m, "do_remote_decode"),
                string(m, "remote_engine_id"), string(m, "remote_request_id"), blockIds(m.get("remote_block_ids")),
                string(m, "remote_host"), intOr(m, "remote_port", 0), intOr(m, "tp_size", 1),
                intOr(m, "remote_num_tokens", 0), string(m, "transfer_mode"),
                slot == null ? null : slot.intValue(), optionalLong(m, "remote_lease_nonce"), extra);
    }

    private static List<List<Integer>> blockIds(Object value) {
        if (value == null) {
            return null;
        }
        require(value instanceof List<?>, "remote_block_ids must be a list of lists of integers");
        List<List<Integer>> groups = new ArrayList<>();
        for (Object group : (List<?>) value) {
            require(group instanceof List<?>, "remote_block_ids must be a list of lists of integers");
            List<Integer> ids = new ArrayList<>();
            for (Object id : (List<?>) group) {
                Long b = integral("remote_block_ids", id);
                require(b != null && b >= Integer.MIN_VALUE && b <= Integer.MAX_VALUE,
                        "remote_block_ids holds an out-of-range id: " + id);
                ids.add(b.intValue());
            }
            groups.add(ids);
        }
        return groups;
    }

    private static boolean bool(Map<String, ?> m, String key) {
        Object v = m.get(key);
        require(v == null || v instanceof Boolean, key + " must be a boolean, got " + v);
        return Boolean.TRUE.equals(v);
    }

    private static String string(Map<String, ?> m, String key) {
        Object v = m.get(key);
        require(v == null || v instanceof String, key + " must be a string, got " + v);
        return (String) v;
    }

    private static int intOr(Map<String, ?> m, String key, int absent) {
        Long v = optionalLong(m, key);
        if (v == null) {
            return absent;
        }
        require(v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE, key + " is out of range: " + v);
        return v.intValue();
    }

    private static Long optionalLong(Map<String, ?> m, String key) {
        return integral(key, m.get(key));
    }

    private static Long integral(String key, Object v) {
        if (v == null) {
            return null;
        }
        require(v instanceof Number, key + " must be an integer, got " + v);
        Number n = (Number) v;
        // A BigDecimal (a parser's exact decimals) may be a fraction its double rounds to an integer.
        require(n.doubleValue() == Math.rint(n.doubleValue()) && Math.abs(n.doubleValue()) < 0x1p63
                && !(n instanceof BigDecimal d && d.signum() != 0 && d.stripTrailingZeros().scale() > 0),
                key + " must be an integer, got " + v);
        return n.longValue();
    }

    private static void require(boolean ok, String message) {
        if (!ok) {
            throw new InvalidKvTransferParamsException(message);
        }
    }
}
