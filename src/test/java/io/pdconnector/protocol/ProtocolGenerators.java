package io.pdconnector.protocol;

import io.pdconnector.testing.Gen;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Generators shared by the protocol's property tests: hostile strings and JSON-like values, valid
 * request ids. Every size is bounded so no try can exhaust the heap.
 */
final class ProtocolGenerators {

    /** Separators, ASCII and C1 controls, Unicode whitespace, BOM, U+FFFD, lone and paired surrogates. */
    static final String NASTY_CHARS = ":,HB-_.+ \t\n\r\u0000\u001f\u007f\u0080\u0085\u009f\u00a0\u1680\u2000\u2007"
            + "\u2028\u2029\u202f\u205f\u3000\ufeff\ufffd\ud800\udbff\udc00\udfff\ud83d\ude00\u00e9\u4e2d\u0661";

    private static final String ASCII_AND_NASTY = Gen.PRINTABLE_ASCII + NASTY_CHARS;
    /** '!' to '~' without the separators, and a few non-ASCII and blank chars. */
    private static final String ID_CHARS = Gen.without(Gen.chars('!', '~'), ":,") + "\u00e9\u4e2d\ufffd\u00a0\u3000 ";
    private static final String ID_ASCII = Gen.without(Gen.chars('!', '~'), ":,");

    private static final List<String> KNOWN_FIELDS = List.of("do_remote_prefill", "do_remote_decode",
            "remote_engine_id", "remote_request_id", "remote_block_ids", "remote_host", "remote_port", "tp_size",
            "remote_num_tokens", "transfer_mode", "remote_lease_slot", "remote_lease_nonce");
    private static final List<String> LOOKALIKE_FIELDS = lookalikes();

    private ProtocolGenerators() {
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
    static String nastyString(Gen g, int maxLength) {
        return switch (g.frequency(6, 2, 2)) {
            case 0 -> g.string(0, maxLength, ASCII_AND_NASTY);
            case 1 -> g.anyString(0, maxLength);
            default -> g.oneOf("", " ", "\u3000", "\u2028", "\u0085", "HB", "hb", "HB:", "a:b", "a,b",
                    "\ud800", "\ud83d\ude00", "x".repeat(RequestIds.MAX_LENGTH),
                    "x".repeat(RequestIds.MAX_LENGTH + 1), "\ud83d\ude00".repeat(RequestIds.MAX_LENGTH),
                    "\ud83d\ude00".repeat(RequestIds.MAX_LENGTH + 1));
        };
    }

    /** An id {@link RequestIds#isValid} accepts, by construction from the documented rule (not filtered). */
    static String validRequestId(Gen g) {
        String id = switch (g.frequency(5, 1, 1, 1)) {
            case 0 -> g.string(1, 64, ID_CHARS);
            case 1 -> g.string(RequestIds.MAX_LENGTH, RequestIds.MAX_LENGTH, ID_ASCII);
            case 2 -> g.string(1, 20, "0123456789");
            default -> g.oneOf("HB", "hb", "HB-1", "cmpl-1-0", "\ud83d\ude00",
                    "\ud83d\ude00".repeat(RequestIds.MAX_LENGTH), "a\u3000b", "\ufffd");
        };
        // Not all blank and not HB: such an id gets a visible char in front.
        return id.isBlank() || id.equals("HB") ? "r" + id : id;
    }

    /** A number a JSON parser may produce, or one of those that break naive integer checks. */
    static Number jsonNumber(Gen g) {
        return switch (g.frequency(3, 3, 2, 2, 2, 1, 1)) {
            case 0 -> g.anyInt();
            case 1 -> g.anyLong();
            case 2 -> g.<Number>oneOf(-1, 0, 1, Integer.MAX_VALUE, Integer.MIN_VALUE, (long) Integer.MAX_VALUE + 1,
                    (long) Integer.MIN_VALUE - 1, Long.MAX_VALUE, Long.MIN_VALUE, 1L << 53, (1L << 53) - 1,
                    (1L << 53) + 1, (long) KvTransferParams.MAX_TOKENS, KvTransferParams.MAX_TOKENS + 1L);
            case 3 -> g.anyDouble();
            case 4 -> g.<Number>oneOf(1.5, 1e300, -1e300, -0.0, 0.0, 1.0, 2.0, Double.NaN,
                    Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, 0x1p53, 0x1p63, -0x1p63, 9.2e18,
                    Double.MIN_VALUE, 1.0f, 1.5f);
            case 5 -> g.oneOf(BigInteger.TWO.pow(64), BigInteger.TWO.pow(63), BigInteger.valueOf(7),
                    BigInteger.TWO.pow(70).negate(), BigInteger.TEN.pow(400));
            default -> g.oneOf(new BigDecimal("1.5"), new BigDecimal("2"), new BigDecimal("2.000"),
                    new BigDecimal("1.00000000000000000001"), new BigDecimal("1E+400"),
                    new BigDecimal("-0.0000000000000000001"));
        };
    }

    /** Scalars a JSON parser may produce, and the numbers that break naive integer checks. */
    static Object jsonScalar(Gen g) {
        return switch (g.frequency(2, 3, 1, 14, 2)) {
            case 0 -> g.bool();
            case 1 -> nastyString(g, 40);
            case 2 -> "\u00e9x".repeat(1_000 << g.intBetween(0, 3));
            case 3 -> jsonNumber(g);
            default -> null;
        };
    }

    /** Scalars, lists and maps of them, nested at most {@code depth} deep, at most 4 wide. */
    static Object jsonValue(Gen g, int depth) {
        if (depth == 0) {
            return jsonScalar(g);
        }
        return switch (g.frequency(8, 2, 1)) {
            case 0 -> jsonScalar(g);
            case 1 -> g.list(0, 4, x -> jsonValue(x, depth - 1));
            default -> {
                List<Object> l = g.list(0, 3, x -> jsonValue(x, depth - 1));
                Map<String, Object> m = new HashMap<>();
                for (int i = 0; i < l.size(); i++) {
                    m.put(i % 2 == 0 ? "k" + i : "K" + i, l.get(i));
                }
                yield m;
            }
        };
    }

    /** The known field names, look-alikes (case, spaces, zero-width), and anything. */
    static String fieldName(Gen g) {
        return switch (g.frequency(6, 2, 2)) {
            case 0 -> g.oneOf(KNOWN_FIELDS);
            case 1 -> g.oneOf(LOOKALIKE_FIELDS);
            default -> nastyString(g, 20);
        };
    }

    private static List<String> lookalikes() {
        List<String> lookalikes = new ArrayList<>();
        for (String k : KNOWN_FIELDS) {
            lookalikes.add(k.toUpperCase());
            lookalikes.add(Character.toUpperCase(k.charAt(0)) + k.substring(1));
            lookalikes.add(k + " ");
            lookalikes.add(k.replace('_', '-'));
            lookalikes.add(k.replaceFirst("_", "\u200b_"));
        }
        return List.copyOf(lookalikes);
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
