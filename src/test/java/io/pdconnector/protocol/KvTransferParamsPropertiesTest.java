package io.pdconnector.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;

/**
 * Properties of {@link KvTransferParams#fromMap} and {@link KvTransferParams#validateForPull}, the
 * parser of the kv_transfer_params any caller can send: arbitrary maps are either refused with an
 * {@link InvalidKvTransferParamsException} or give params that obey every documented rule, checked
 * here against the input itself (exact integer values, no rounding); valid params round-trip through
 * toMap/fromMap; unknown fields are kept and written back.
 *
 * <p>On a failure jqwik prints the shrunk sample and a line {@code seed = <n>}; replay exactly that
 * run with {@code @Property(seed = "<n>")} on the failing property (jqwik also re-runs the last
 * failing sample first on the next run, from its database file {@code .jqwik-database}).
 */
class KvTransferParamsPropertiesTest {

    private static final Set<String> KNOWN = Set.copyOf(ProtocolArbitraries.validMap().keySet());

    @Property(tries = 500)
    void arbitraryMapsAreRefusedCleanlyOrObeyTheRules(@ForAll("hostileMaps") Map<String, Object> m) {
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
    }

    @Property(tries = 500)
    void validParamsRoundTripThroughTheirMap(@ForAll("validParams") KvTransferParams p) {
        p.validateForPull();
        assertEquals(p, KvTransferParams.fromMap(p.toMap()).validateForPull());
    }

    @Property(tries = 1000)
    void integerFieldsTakeOnlyExactIntegers(@ForAll("integerFields") String field, @ForAll("numbers") Number n) {
        Map<String, Object> m = ProtocolArbitraries.validMap();
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
    }

    @Provide
    Arbitrary<String> integerFields() {
        return Arbitraries.of("remote_port", "tp_size", "remote_num_tokens", "remote_lease_slot", "remote_lease_nonce",
                "remote_block_ids");
    }

    /** Numbers on, next to and far from the integers, as every Number type a JSON parser may use. */
    @Provide
    Arbitrary<Number> numbers() {
        Arbitrary<Long> near = Arbitraries.longs().between(-3, 3000);
        return Arbitraries.frequencyOf(
                Tuple.of(2, near.map(l -> (Number) l)),
                Tuple.of(2, near.map(l -> (Number) l.doubleValue())),
                Tuple.of(1, near.map(l -> (Number) (float) l)),
                Tuple.of(1, near.map(l -> (Number) BigInteger.valueOf(l))),
                Tuple.of(1, near.map(l -> (Number) new BigDecimal(l + ".000"))),
                Tuple.of(3, Combinators.combine(near, Arbitraries.integers().between(1, 40),
                        Arbitraries.integers().between(1, 9)).as((l, scale, digit) ->
                                (Number) BigDecimal.valueOf(l).add(BigDecimal.valueOf(digit, scale)))),
                Tuple.of(2, near.map(l -> (Number) Math.nextUp((double) l))),
                Tuple.of(2, ProtocolArbitraries.jsonScalars().filter(v -> v instanceof Number).map(v -> (Number) v)));
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

    @Provide
    Arbitrary<Map<String, Object>> hostileMaps() {
        Arbitrary<Map<String, Object>> anything = Arbitraries.maps(ProtocolArbitraries.fieldNames(),
                ProtocolArbitraries.jsonValues(2)).ofMaxSize(10);
        // A valid map with 1-4 fields replaced, removed or added: reaches every check of validateForPull.
        Arbitrary<Map<String, Object>> edited = Arbitraries.maps(ProtocolArbitraries.fieldNames(),
                Arbitraries.frequencyOf(Tuple.of(8, ProtocolArbitraries.jsonValues(2)),
                        Tuple.of(1, validBlockIds().map(b -> (Object) b)),
                        Tuple.of(1, Arbitraries.just(REMOVE))))
                .ofMinSize(1).ofMaxSize(4)
                .map(edits -> {
                    Map<String, Object> m = ProtocolArbitraries.validMap();
                    edits.forEach((k, v) -> {
                        if (v == REMOVE) {
                            m.remove(k);
                        } else {
                            m.put(k, v);
                        }
                    });
                    return m;
                });
        Arbitrary<Map<String, Object>> nullKey = edited.map(m -> {
            Map<String, Object> withNullKey = new HashMap<>(m);
            withNullKey.put(null, "x");
            return withNullKey;
        });
        return Arbitraries.frequencyOf(Tuple.of(3, anything), Tuple.of(6, edited), Tuple.of(1, nullKey));
    }

    private static final Object REMOVE = new Object() {
        @Override
        public String toString() {
            return "<removed>";
        }
    };

    private static Arbitrary<List<List<Integer>>> validBlockIds() {
        return Arbitraries.integers().between(0, Integer.MAX_VALUE).list().ofMinSize(1).ofMaxSize(64)
                .map(List::of);
    }

    @Provide
    Arbitrary<KvTransferParams> validParams() {
        Arbitrary<String> engines = ProtocolArbitraries.nastyStrings(40).filter(s -> !s.isBlank());
        Arbitrary<String> hosts = ProtocolArbitraries.nastyStrings(40).injectNull(0.2);
        Arbitrary<String> modes = Arbitraries.of("pull").injectNull(0.5);
        Arbitrary<Long> nonces = Arbitraries.longs().between(1, (1L << 53) - 1);
        Arbitrary<Tuple.Tuple2<Integer, Long>> leases = Combinators.combine(
                Arbitraries.integers().between(0, Integer.MAX_VALUE), nonces).as(Tuple::of).injectNull(0.3);
        Arbitrary<Map<String, Object>> extras = Arbitraries.maps(
                ProtocolArbitraries.fieldNames().filter(k -> !KNOWN.contains(k)),
                ProtocolArbitraries.jsonValues(2)).ofMaxSize(5);
        Arbitrary<KvTransferParams> noExtras = Combinators.combine(engines, ProtocolArbitraries.validRequestIds(),
                validBlockIds(), hosts, Arbitraries.integers(),
                Arbitraries.integers().between(1, KvTransferParams.MAX_TP),
                Arbitraries.integers().between(1, KvTransferParams.MAX_TOKENS), modes)
                .as((engine, id, blocks, host, port, tp, tokens, mode) -> new KvTransferParams(true, false, engine, id,
                        blocks, host, port, tp, tokens, mode, null, null, Map.of()));
        return Combinators.combine(noExtras, Arbitraries.of(true, false), leases, extras)
                .as((p, decode, lease, extra) -> new KvTransferParams(true, decode, p.remoteEngineId(),
                        p.remoteRequestId(), p.remoteBlockIds(), p.remoteHost(), p.remotePort(), p.tpSize(),
                        p.remoteNumTokens(), p.transferMode(), lease == null ? null : lease.get1(),
                        lease == null ? null : lease.get2(), extra));
    }
}
