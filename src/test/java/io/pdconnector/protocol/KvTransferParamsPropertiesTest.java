package io.pdconnector.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.testing.Gen;
import io.pdconnector.testing.Property;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Properties of {@link KvTransferParams#fromMap} and {@link KvTransferParams#validateForPull}, the
 * parser of the kv_transfer_params any caller can send: arbitrary maps are either refused with an
 * {@link InvalidKvTransferParamsException} or give params that obey every documented rule, checked
 * here against the input itself (exact integer values, no rounding); valid params round-trip through
 * toMap/fromMap; unknown fields are kept and written back.
 *
 * <p>Each property runs its tries on inputs of {@link Gen} from a fixed seed (see {@link Property}).
 * A failure's message names the seed, the try and the input, and the replay of exactly that try:
 * {@code -Dtest='KvTransferParamsPropertiesTest#<property>' -Dpd.prop.seed=<seed> -Dpd.prop.try=<try>}.
 * For a longer local run: {@code -Dpd.prop.seed=<any> -Dpd.prop.tries=<n>}.
 */
class KvTransferParamsPropertiesTest {

    private static final Set<String> KNOWN = Set.copyOf(ProtocolGenerators.validMap().keySet());

    @Test
    void arbitraryMapsAreRefusedCleanlyOrObeyTheRules() {
        Property.forAll(1203_01L, 500, KvTransferParamsPropertiesTest::hostileMap, m -> {
            KvTransferParams p;
            try {
                p = KvTransferParams.fromMap(m);
            } catch (InvalidKvTransferParamsException refused) {
                return;
            }
            Map<String, Object> unknown = new LinkedHashMap<>(m);
            unknown.keySet().removeAll(KNOWN);
            assertEquals(unknown, p.extra(), "unknown fields are kept as they came");
            Map<String, Object> out = p.toMap();
            unknown.forEach((k, v) -> {
                assertTrue(out.containsKey(k), "unknown field written back: " + k);
                assertEquals(v, out.get(k), "unknown field written back unchanged: " + k);
            });
            try {
                p.validateForPull();
            } catch (InvalidKvTransferParamsException refused) {
                return;
            }
            assertAcceptedInputObeysTheRules(m, p);
        });
    }

    @Test
    void validParamsRoundTripThroughTheirMap() {
        Property.forAll(1203_02L, 500, KvTransferParamsPropertiesTest::validParams, p -> {
            p.validateForPull();
            assertEquals(p, KvTransferParams.fromMap(p.toMap()).validateForPull());
        });
    }

    private record FieldValue(String field, Number n) {
    }

    @Test
    void integerFieldsTakeOnlyExactIntegers() {
        Property.forAll(1203_03L, 1000, g -> new FieldValue(integerField(g), number(g)), in -> {
            String field = in.field();
            Number n = in.n();
            Map<String, Object> m = ProtocolGenerators.validMap();
            if (field.equals("remote_block_ids")) {
                m.put(field, List.of(List.of(1, n)));
            } else {
                m.put(field, n);
            }
            KvTransferParams p;
            try {
                p = KvTransferParams.fromMap(m).validateForPull();
            } catch (InvalidKvTransferParamsException refused) {
                return;
            }
            assertAcceptedInputObeysTheRules(m, p);
        });
    }

    private static String integerField(Gen g) {
        return g.oneOf("remote_port", "tp_size", "remote_num_tokens", "remote_lease_slot", "remote_lease_nonce",
                "remote_block_ids");
    }

    /** Numbers on, next to and far from the integers, as every Number type a JSON parser may use. */
    private static Number number(Gen g) {
        long l = g.longBetween(-3, 3000);
        return switch (g.frequency(2, 2, 1, 1, 1, 3, 2, 2)) {
            case 0 -> l;
            case 1 -> (double) l;
            case 2 -> (float) l;
            case 3 -> BigInteger.valueOf(l);
            case 4 -> new BigDecimal(l + ".000");
            case 5 -> BigDecimal.valueOf(l).add(BigDecimal.valueOf(g.intBetween(1, 9), g.intBetween(1, 40)));
            case 6 -> Math.nextUp((double) l);
            default -> ProtocolGenerators.jsonNumber(g);
        };
    }

    /** Everything validateForPull's rules ask, read from the map the caller sent, not from the params. */
    private static void assertAcceptedInputObeysTheRules(Map<String, Object> m, KvTransferParams p) {
        assertEquals(Boolean.TRUE, m.get("do_remote_prefill"));
        assertTrue(m.get("do_remote_decode") == null || m.get("do_remote_decode") instanceof Boolean);
        String engine = assertInstanceOf(String.class, m.get("remote_engine_id"));
        assertTrue(!engine.isBlank() && engine.equals(p.remoteEngineId()));
        String id = assertInstanceOf(String.class, m.get("remote_request_id"));
        assertTrue(RequestIds.isValid(id) && id.equals(p.remoteRequestId()));
        assertTrue(m.get("transfer_mode") == null || "pull".equals(m.get("transfer_mode")));
        assertTrue(m.get("remote_host") == null || m.get("remote_host").equals(p.remoteHost()));
        assertExactInt(m, "remote_port", p.remotePort(), 0, Integer.MIN_VALUE, Integer.MAX_VALUE);
        assertExactInt(m, "tp_size", p.tpSize(), 1, 1, KvTransferParams.MAX_TP);
        assertExactInt(m, "remote_num_tokens", p.remoteNumTokens(), 0, 1, KvTransferParams.MAX_TOKENS);

        List<?> groups = assertInstanceOf(List.class, m.get("remote_block_ids"));
        assertEquals(1, groups.size());
        List<?> group = assertInstanceOf(List.class, groups.getFirst());
        assertTrue(!group.isEmpty() && group.size() == p.blockIds().length);
        for (int i = 0; i < group.size(); i++) {
            assertEquals(BigDecimal.valueOf(p.blockIds()[i]), exactInteger(group.get(i)), "block id " + i);
            assertTrue(p.blockIds()[i] >= 0);
        }

        assertEquals(m.get("remote_lease_slot") == null, m.get("remote_lease_nonce") == null);
        if (m.get("remote_lease_slot") != null) {
            assertEquals(BigDecimal.valueOf(p.remoteLeaseSlot()), exactInteger(m.get("remote_lease_slot")));
            assertEquals(BigDecimal.valueOf(p.remoteLeaseNonce()), exactInteger(m.get("remote_lease_nonce")));
            assertTrue(p.remoteLeaseSlot() >= 0);
            assertTrue(p.remoteLeaseNonce() >= 1 && p.remoteLeaseNonce() < 1L << 53);
        }
    }

    private static void assertExactInt(Map<String, Object> m, String key, int parsed, int absent, long min, long max) {
        Object v = m.get(key);
        BigDecimal exact = v == null ? BigDecimal.valueOf(absent) : exactInteger(v);
        assertEquals(BigDecimal.valueOf(parsed), exact, key + " was " + v);
        assertTrue(parsed >= min && parsed <= max, key + " out of its range: " + parsed);
    }

    /** The exact value of an integral JSON number; fails the property for anything else. */
    private static BigDecimal exactInteger(Object v) {
        BigDecimal exact = switch (v) {
            case Integer i -> BigDecimal.valueOf(i);
            case Long l -> BigDecimal.valueOf(l);
            case BigInteger b -> new BigDecimal(b);
            case BigDecimal d -> d;
            case Double d when Double.isFinite(d) -> new BigDecimal(d);
            case Float f when Float.isFinite(f) -> new BigDecimal(f);
            default -> null;
        };
        assertNotNull(exact, "accepted as an integer: " + v);
        assertTrue(exact.signum() == 0 || exact.stripTrailingZeros().scale() <= 0, "accepted as an integer: " + v);
        return exact.setScale(0);
    }

    /** A valid map with 1-4 fields replaced, removed or added: reaches every check of validateForPull. */
    private static Map<String, Object> editedMap(Gen g) {
        Map<String, Object> edits = g.map(1, 4, ProtocolGenerators::fieldName, x -> switch (x.frequency(8, 1, 1)) {
            case 0 -> ProtocolGenerators.jsonValue(x, 2);
            case 1 -> validBlockIds(x);
            default -> REMOVE;
        });
        Map<String, Object> m = ProtocolGenerators.validMap();
        edits.forEach((k, v) -> {
            if (v == REMOVE) {
                m.remove(k);
            } else {
                m.put(k, v);
            }
        });
        return m;
    }

    private static Map<String, Object> hostileMap(Gen g) {
        return switch (g.frequency(3, 6, 1)) {
            case 0 -> g.map(0, 10, ProtocolGenerators::fieldName, x -> ProtocolGenerators.jsonValue(x, 2));
            case 1 -> editedMap(g);
            default -> {
                Map<String, Object> withNullKey = new HashMap<>(editedMap(g));
                withNullKey.put(null, "x");
                yield withNullKey;
            }
        };
    }

    private static final Object REMOVE = new Object() {
        @Override
        public String toString() {
            return "<removed>";
        }
    };

    private static List<List<Integer>> validBlockIds(Gen g) {
        return List.of(g.list(1, 64, x -> x.intBetween(0, Integer.MAX_VALUE)));
    }

    private static KvTransferParams validParams(Gen g) {
        String engine = g.until(s -> !s.isBlank(), x -> ProtocolGenerators.nastyString(x, 40));
        String id = ProtocolGenerators.validRequestId(g);
        List<List<Integer>> blocks = validBlockIds(g);
        String host = g.nullOr(0.2, x -> ProtocolGenerators.nastyString(x, 40));
        int port = g.anyInt();
        int tp = g.intBetween(1, KvTransferParams.MAX_TP);
        int tokens = g.intBetween(1, KvTransferParams.MAX_TOKENS);
        String mode = g.nullOr(0.5, x -> "pull");
        boolean decode = g.bool();
        boolean lease = !g.chance(0.3);
        Integer slot = lease ? g.intBetween(0, Integer.MAX_VALUE) : null;
        Long nonce = lease ? g.longBetween(1, (1L << 53) - 1) : null;
        Map<String, Object> extra = g.map(0, 5,
                x -> x.until(k -> !KNOWN.contains(k), ProtocolGenerators::fieldName),
                x -> ProtocolGenerators.jsonValue(x, 2));
        return new KvTransferParams(true, decode, engine, id, blocks, host, port, tp, tokens, mode, slot, nonce, extra);
    }
}
