package io.pdconnector.protocol;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Tuple;

/**
 * Generators shared by the protocol's property tests: hostile strings and JSON-like values, valid
 * request ids. Every size is bounded so no try can exhaust the heap.
 */
final class ProtocolArbitraries {

    /** Separators, ASCII and C1 controls, Unicode whitespace, BOM, U+FFFD, lone and paired surrogates. */
    static final String NASTY_CHARS = ":,HB-_.+ \t\n\r\u0000\u001f\u007f\u0080\u0085\u009f\u00a0\u1680\u2000\u2007"
            + "\u2028\u2029\u202f\u205f\u3000\ufeff\ufffd\ud800\udbff\udc00\udfff\ud83d\ude00\u00e9\u4e2d\u0661";

    private ProtocolArbitraries() {
    }

    /** A string as its UTF-16 code units, readable whatever the console's encoding. */
    static String describe(String s) {
        StringBuilder sb = new StringBuilder("a string of ").append(s.length()).append(" chars (");
        s.chars().limit(40).forEach(c -> sb.append(String.format(" %04X", c)));
        return sb.append(s.length() > 40 ? " ...)" : ")").toString();
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Any string at all: printable ASCII mixed with {@link #NASTY_CHARS}, or any UTF-16 chars. */
    static Arbitrary<String> nastyStrings(int maxLength) {
        return Arbitraries.frequencyOf(
                Tuple.of(6, Arbitraries.strings().withCharRange(' ', '~').withChars(NASTY_CHARS)
                        .ofMaxLength(maxLength)),
                Tuple.of(2, Arbitraries.strings().all().ofMaxLength(maxLength)),
                Tuple.of(2, Arbitraries.of("", " ", "\u3000", "\u2028", "\u0085", "HB", "hb", "HB:", "a:b", "a,b",
                        "\ud800", "\ud83d\ude00", "x".repeat(RequestIds.MAX_LENGTH),
                        "x".repeat(RequestIds.MAX_LENGTH + 1), "\ud83d\ude00".repeat(RequestIds.MAX_LENGTH),
                        "\ud83d\ude00".repeat(RequestIds.MAX_LENGTH + 1))));
    }

    /** Ids {@link RequestIds#isValid} accepts, by construction from the documented rule (not filtered). */
    static Arbitrary<String> validRequestIds() {
        Arbitrary<String> generated = Arbitraries.frequencyOf(
                Tuple.of(5, Arbitraries.strings().withCharRange('!', '~').excludeChars(':', ',')
                        .withChars("\u00e9\u4e2d\ufffd\u00a0\u3000 ").ofMinLength(1).ofMaxLength(64)),
                Tuple.of(1, Arbitraries.strings().withCharRange('!', '~').excludeChars(':', ',')
                        .ofLength(RequestIds.MAX_LENGTH)),
                Tuple.of(1, Arbitraries.strings().numeric().ofMinLength(1).ofMaxLength(20)),
                Tuple.of(1, Arbitraries.of("HB", "hb", "HB-1", "cmpl-1-0", "\ud83d\ude00",
                        "\ud83d\ude00".repeat(RequestIds.MAX_LENGTH), "a\u3000b", "\ufffd")));
        // Not all blank and not HB: such an id gets a visible char in front.
        return generated.map(id -> id.isBlank() || id.equals("HB") ? "r" + id : id);
    }

    /** Scalars a JSON parser may produce, and the numbers that break naive integer checks. */
    static Arbitrary<Object> jsonScalars() {
        return Arbitraries.frequencyOf(
                Tuple.of(2, Arbitraries.of(true, false)),
                Tuple.of(3, nastyStrings(40)),
                Tuple.of(1, Arbitraries.integers().between(0, 3).map(k -> "\u00e9x".repeat(1_000 << k))),
                Tuple.of(3, Arbitraries.integers()),
                Tuple.of(3, Arbitraries.longs()),
                Tuple.of(2, Arbitraries.of(-1, 0, 1, Integer.MAX_VALUE, Integer.MIN_VALUE, (long) Integer.MAX_VALUE + 1,
                        (long) Integer.MIN_VALUE - 1, Long.MAX_VALUE, Long.MIN_VALUE, 1L << 53, (1L << 53) - 1,
                        (1L << 53) + 1, (long) KvTransferParams.MAX_TOKENS, KvTransferParams.MAX_TOKENS + 1L)),
                Tuple.of(2, Arbitraries.doubles()),
                Tuple.of(2, Arbitraries.of(1.5, 1e300, -1e300, -0.0, 0.0, 1.0, 2.0, Double.NaN,
                        Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, 0x1p53, 0x1p63, -0x1p63, 9.2e18,
                        Double.MIN_VALUE, 1.0f, 1.5f)),
                Tuple.of(1, Arbitraries.of(BigInteger.TWO.pow(64), BigInteger.TWO.pow(63), BigInteger.valueOf(7),
                        BigInteger.TWO.pow(70).negate(), BigInteger.TEN.pow(400))),
                Tuple.of(1, Arbitraries.of(new BigDecimal("1.5"), new BigDecimal("2"), new BigDecimal("2.000"),
                        new BigDecimal("1.00000000000000000001"), new BigDecimal("1E+400"),
                        new BigDecimal("-0.0000000000000000001"))),
                Tuple.of(2, Arbitraries.just(null)));
    }

    /** Scalars, lists and maps of them, nested at most {@code depth} deep, at most 4 wide. */
    static Arbitrary<Object> jsonValues(int depth) {
        if (depth == 0) {
            return jsonScalars();
        }
        Arbitrary<Object> inner = jsonValues(depth - 1);
        return Arbitraries.frequencyOf(
                Tuple.of(8, jsonScalars()),
                Tuple.of(2, inner.list().ofMaxSize(4).map(l -> (Object) l)),
                Tuple.of(1, inner.list().ofMaxSize(3).map(l -> {
                    Map<String, Object> m = new HashMap<>();
                    for (int i = 0; i < l.size(); i++) {
                        m.put(i % 2 == 0 ? "k" + i : "K" + i, l.get(i));
                    }
                    return (Object) m;
                })));
    }

    /** The known field names, look-alikes (case, spaces, zero-width), and anything. */
    static Arbitrary<String> fieldNames() {
        List<String> known = List.of("do_remote_prefill", "do_remote_decode", "remote_engine_id",
                "remote_request_id", "remote_block_ids", "remote_host", "remote_port", "tp_size",
                "remote_num_tokens", "transfer_mode", "remote_lease_slot", "remote_lease_nonce");
        List<String> lookalikes = new ArrayList<>();
        for (String k : known) {
            lookalikes.add(k.toUpperCase());
            lookalikes.add(Character.toUpperCase(k.charAt(0)) + k.substring(1));
            lookalikes.add(k + " ");
            lookalikes.add(k.replace('_', '-'));
            lookalikes.add(k.replaceFirst("_", "\u200b_"));
        }
        return Arbitraries.frequencyOf(
                Tuple.of(6, Arbitraries.of(known)),
                Tuple.of(2, Arbitraries.of(lookalikes)),
                Tuple.of(2, nastyStrings(20)));
    }

    /** A map that passes validateForPull, for edits that reach past the first check. */
    static Map<String, Object> validMap() {
        Map<String, Object> m = new HashMap<>();
        m.put("do_remote_prefill", true);
        m.put("do_remote_decode", false);
        m.put("remote_engine_id", "p");
        m.put("remote_request_id", "req-1");
        m.put("remote_block_ids", List.of(List.of(3, 4)));
        m.put("remote_host", "10.0.0.1");
        m.put("remote_port", 8080);
        m.put("tp_size", 2);
        m.put("remote_num_tokens", 20);
        m.put("transfer_mode", "pull");
        m.put("remote_lease_slot", 5);
        m.put("remote_lease_nonce", (1L << 53) - 1);
        return m;
    }
}
