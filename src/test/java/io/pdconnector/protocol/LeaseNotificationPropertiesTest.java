package io.pdconnector.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.testing.Gen;
import io.pdconnector.testing.Property;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Properties of {@link LeaseNotification#parse}, which reads bytes any peer can send a prefill
 * rank: it never throws, and it gives a Read or a Heartbeat only for bytes that are exactly the
 * encoding of a valid one (anything else is Malformed); valid Reads and Heartbeats round-trip
 * through encode/parse; an id can travel in a notification iff {@link RequestIds#isValid} says so.
 *
 * <p>Each property runs its tries on inputs of {@link Gen} from a fixed seed (see {@link Property}).
 * A failure's message names the seed, the try and the input, and the replay of exactly that try:
 * {@code -Dtest='LeaseNotificationPropertiesTest#<property>' -Dpd.prop.seed=<seed> -Dpd.prop.try=<try>}.
 * For a longer local run: {@code -Dpd.prop.seed=<any> -Dpd.prop.tries=<n>}.
 */
class LeaseNotificationPropertiesTest {

    private static final long NONCE_LIMIT = 1L << 53;

    @Test
    void arbitraryBytesGiveAReadOrHeartbeatOnlyWhenExactlyOne() {
        Property.forAll(1202_01L, 1000, LeaseNotificationPropertiesTest::hostileMessage, message -> {
            switch (LeaseNotification.parse(message)) {
                case LeaseNotification.Read r -> {
                    assertTrue(RequestIds.isValid(r.requestId()), "read of an invalid id: " + r);
                    assertTrue(r.consumers() >= 1, "read with no consumers: " + r);
                    assertTrue(r.nonce() == LeaseNotification.NO_NONCE || Nonces.isValid(r.nonce()),
                            "bad nonce: " + r);
                    assertArrayEquals(r.encode(), message, "accepted bytes that are not exactly the encoding of " + r);
                }
                case LeaseNotification.Heartbeat h -> {
                    assertFalse(h.leases().isEmpty());
                    assertTrue(h.leases().stream().allMatch(l -> RequestIds.isValid(l.requestId())),
                            "heartbeat of an invalid id: " + h);
                    assertTrue(h.leases().stream().allMatch(l -> l.nonce() == LeaseNotification.NO_NONCE
                            || Nonces.isValid(l.nonce())), "heartbeat with a bad nonce: " + h);
                    assertArrayEquals(h.encode(), message, "accepted bytes that are not exactly the encoding of " + h);
                }
                case LeaseNotification.Malformed m -> {
                }
            }
        });
    }

    private record ReadInput(String id, int consumers, long nonce) {
    }

    @Test
    void validReadsRoundTrip() {
        Property.forAll(1202_02L, 1000,
                g -> new ReadInput(ProtocolGenerators.validRequestId(g), g.intBetween(1, Integer.MAX_VALUE),
                        nonceOrNone(g)),
                in -> {
                    LeaseNotification.Read read = new LeaseNotification.Read(in.id(), in.consumers(), in.nonce());
                    assertEquals(read, LeaseNotification.parse(read.encode()));
                });
    }

    @Test
    void validHeartbeatsRoundTrip() {
        Property.forAll(1202_03L, 1000, g -> g.list(1, 20,
                x -> new LeaseNotification.LeaseRef(ProtocolGenerators.validRequestId(x), nonceOrNone(x))), leases -> {
                    LeaseNotification.Heartbeat hb = new LeaseNotification.Heartbeat(leases);
                    assertEquals(hb, LeaseNotification.parse(hb.encode()));
                });
    }

    /** A read's consumers and nonce (null: none) as text, at least one of them out of its range or not a number. */
    private record BadNumbers(String id, String consumers, String nonce) {
    }

    @Test
    void readsWithBadNumbersAreMalformed() {
        Property.forAll(1202_04L, 1000, LeaseNotificationPropertiesTest::badNumbers, in -> {
            String text = in.id() + ":" + in.consumers() + (in.nonce() == null ? "" : ":" + in.nonce());
            assertInstanceOf(LeaseNotification.Malformed.class,
                    LeaseNotification.parse(text.getBytes(StandardCharsets.UTF_8)), text);
        });
    }

    @Test
    void anIdCanTravelInANotificationIffItIsValid() {
        Property.forAll(1202_05L, 1000,
                g -> g.bool() ? ProtocolGenerators.nastyString(g, 300) : ProtocolGenerators.validRequestId(g), id -> {
                    LeaseNotification.Read read = new LeaseNotification.Read(id, 2, 7);
                    LeaseNotification.Read unverified = new LeaseNotification.Read(id, 2, LeaseNotification.NO_NONCE);
                    LeaseNotification.Heartbeat hb = new LeaseNotification.Heartbeat(List.of(
                            new LeaseNotification.LeaseRef(id, 7), new LeaseNotification.LeaseRef(id,
                                    LeaseNotification.NO_NONCE)));
                    boolean valid = RequestIds.isValid(id);
                    String d = ProtocolGenerators.describe(id);
                    assertEquals(valid, read.equals(LeaseNotification.parse(read.encode())), "read of " + d);
                    assertEquals(valid, unverified.equals(LeaseNotification.parse(unverified.encode())),
                            "unverified read of " + d);
                    assertEquals(valid, hb.equals(LeaseNotification.parse(hb.encode())), "heartbeat of " + d);
                });
    }

    private static long nonceOrNone(Gen g) {
        return g.bool() ? LeaseNotification.NO_NONCE : g.longBetween(1, NONCE_LIMIT - 1);
    }

    /** (consumers, nonce or null): at least one of them out of its range, overflowing or not a number. */
    private static BadNumbers badNumbers(Gen g) {
        String id = ProtocolGenerators.validRequestId(g);
        return switch (g.below(3)) {
            case 0 -> new BadNumbers(id, badConsumers(g), g.nullOr(0.5, LeaseNotificationPropertiesTest::goodNonce));
            case 1 -> new BadNumbers(id, String.valueOf(g.intBetween(1, Integer.MAX_VALUE)), badNonce(g));
            default -> new BadNumbers(id, badConsumers(g), badNonce(g));
        };
    }

    private static String badConsumers(Gen g) {
        return switch (g.below(3)) {
            case 0 -> String.valueOf(g.intBetween(Integer.MIN_VALUE, 0));
            case 1 -> String.valueOf(g.longBetween(1L + Integer.MAX_VALUE, Long.MAX_VALUE));
            default -> g.oneOf("", " 1", "1 ", "1.0", "1e3", "0x1", "-", "99999999999999999999", "NaN", "one");
        };
    }

    private static String goodNonce(Gen g) {
        return String.valueOf(g.longBetween(1, NONCE_LIMIT - 1));
    }

    private static String badNonce(Gen g) {
        return switch (g.below(3)) {
            case 0 -> String.valueOf(g.longBetween(Long.MIN_VALUE, 0));
            case 1 -> String.valueOf(g.longBetween(NONCE_LIMIT, Long.MAX_VALUE));
            default -> g.oneOf("", "0", "-0", "1.0", "9223372036854775808", "99999999999999999999999", "1,2", "x");
        };
    }

    /** A piece of a message near the grammar. */
    private static byte[] token(Gen g) {
        return switch (g.frequency(4, 3, 2, 1, 1)) {
            case 0 -> ProtocolGenerators.utf8(ProtocolGenerators.validRequestId(g));
            case 1 -> ProtocolGenerators.utf8(g.oneOf("HB:", ":", ",", "HB", "0", "1", "7", "-1", "+1", "01",
                    "\u0661", "2147483647", "2147483648", "-2147483648", "9007199254740991", "9007199254740992",
                    "9223372036854775807", "9223372036854775808", "\u0000", "\n", "\u0085", " ", "\u3000"));
            case 2 -> ProtocolGenerators.utf8(Long.toString(g.anyLong()));
            case 3 -> ProtocolGenerators.utf8(ProtocolGenerators.nastyString(g, 12));
            default -> g.oneOf(new byte[] {(byte) 0xff}, new byte[] {(byte) 0xc0, (byte) 0x80},
                    new byte[] {(byte) 0xed, (byte) 0xa0, (byte) 0x80}, new byte[] {(byte) 0xe2, (byte) 0x82},
                    new byte[] {(byte) 0xef, (byte) 0xbf, (byte) 0xbd}).clone();
        };
    }

    /**
     * Bytes near the grammar (ids, separators, numbers at and past every limit, non-ASCII digits and
     * signs, invalid UTF-8), messages in the grammar's shape with one part off, random bytes, and
     * huge inputs up to 64 KiB.
     */
    private static byte[] hostileMessage(Gen g) {
        return switch (g.frequency(14, 4, 1, 1, 10)) {
            case 0 -> concat(g.list(0, 12, LeaseNotificationPropertiesTest::token));
            case 1 -> g.bytes(0, 64);
            case 2 -> {
                byte[] unit = concat(g.list(1, 4, LeaseNotificationPropertiesTest::token));
                int size = g.intBetween(1, 64 * 1024);
                ByteArrayOutputStream out = new ByteArrayOutputStream(size + unit.length);
                while (out.size() < size && unit.length > 0) {
                    out.writeBytes(unit);
                }
                yield out.toByteArray();
            }
            case 3 -> ProtocolGenerators.utf8("HB:" + "req-1,".repeat(g.intBetween(1, 64 * 1024 / 8)) + "req-1");
            default -> framed(g);
        };
    }

    /**
     * A read ({@code <id>:<consumers>[:<nonce>]}) or heartbeat ({@code HB:<id>[:<nonce>],...}) in shape, its
     * numbers often written as encode() never does (sign, leading zero, other scripts' digits), its
     * id lists with empty ids, and 1 in 3 with an invalid UTF-8 sequence put in anywhere.
     */
    private static byte[] framed(Gen g) {
        String text;
        if (g.bool()) {
            String id = g.frequency(6, 1) == 0 ? ProtocolGenerators.validRequestId(g)
                    : ProtocolGenerators.nastyString(g, 12);
            text = id + ":" + number(g, g.intBetween(1, Integer.MAX_VALUE))
                    + (g.bool() ? "" : ":" + number(g, g.longBetween(1, NONCE_LIMIT - 1)));
        } else {
            List<String> ids = g.list(1, 5, x -> (x.frequency(5, 1) == 0 ? ProtocolGenerators.validRequestId(x) : "")
                    + (x.bool() ? "" : ":" + number(x, x.longBetween(1, NONCE_LIMIT - 1))));
            text = (g.frequency(6, 1) == 0 ? "" : ",") + String.join(",", ids) + (g.frequency(3, 1) == 0 ? "" : ",");
            text = "HB:" + text;
        }
        byte[] bytes = ProtocolGenerators.utf8(text);
        if (g.frequency(2, 1) == 0) {
            return bytes;
        }
        int at = g.oneOf(0, bytes.length, g.intBetween(0, bytes.length));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(bytes, 0, at);
        out.writeBytes(g.oneOf(INVALID_UTF8));
        out.write(bytes, at, bytes.length - at);
        return out.toByteArray();
    }

    /** {@code n} as encode() writes it (half the time), else with a sign, a leading zero or other digits. */
    private static String number(Gen g, long n) {
        String s = Long.toString(n);
        return switch (g.frequency(6, 1, 1, 1, 2, 1)) {
            case 0 -> s;
            case 1 -> "+" + s;
            case 2 -> "-" + s;
            case 3 -> "0" + s;
            case 4 -> {
                int i = g.below(s.length());
                char zero = g.oneOf('\u0660', '\u06f0', '\u0966', '\uff10');
                yield s.substring(0, i) + (char) (zero + s.charAt(i) - '0') + s.substring(i + 1);
            }
            default -> g.oneOf("", " " + s, s + " ", "0");
        };
    }

    private static final List<byte[]> INVALID_UTF8 = List.of(new byte[] {(byte) 0xff},
            new byte[] {(byte) 0xc0, (byte) 0x80}, new byte[] {(byte) 0xed, (byte) 0xa0, (byte) 0x80},
            new byte[] {(byte) 0xe2, (byte) 0x82}, new byte[] {(byte) 0x80}, new byte[] {(byte) 0xf5});

    private static byte[] concat(List<byte[]> parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        parts.forEach(out::writeBytes);
        return out.toByteArray();
    }
}
