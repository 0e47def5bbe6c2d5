package io.pdconnector.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.constraints.IntRange;

/**
 * Properties of {@link LeaseNotification#parse}, which reads bytes any peer can send a prefill
 * rank: it never throws, and it gives a Read or a Heartbeat only for bytes that are exactly the
 * encoding of a valid one (anything else is Malformed); valid Reads and Heartbeats round-trip
 * through encode/parse; an id can travel in a notification iff {@link RequestIds#isValid} says so.
 *
 * <p>On a failure jqwik prints the shrunk sample and a line {@code seed = <n>}; replay exactly that
 * run with {@code @Property(seed = "<n>")} on the failing property (jqwik also re-runs the last
 * failing sample first on the next run, from its database file {@code .jqwik-database}).
 */
class LeaseNotificationPropertiesTest {

    private static final long NONCE_LIMIT = 1L << 53;

    @Property(tries = 1000)
    void arbitraryBytesGiveAReadOrHeartbeatOnlyWhenExactlyOne(@ForAll("hostileMessages") byte[] message) {
        switch (LeaseNotification.parse(message)) {
            case LeaseNotification.Read r -> {
                assertTrue(RequestIds.isValid(r.requestId()), "read of an invalid id: " + r);
                assertTrue(r.consumers() >= 1, "read with no consumers: " + r);
                assertTrue(r.nonce() == LeaseNotification.NO_NONCE || Nonces.isValid(r.nonce()), "bad nonce: " + r);
                assertArrayEquals(r.encode(), message, "accepted bytes that are not exactly the encoding of " + r);
            }
            case LeaseNotification.Heartbeat h -> {
                assertFalse(h.requestIds().isEmpty());
                assertTrue(h.requestIds().stream().allMatch(RequestIds::isValid), "heartbeat of an invalid id: " + h);
                assertArrayEquals(h.encode(), message, "accepted bytes that are not exactly the encoding of " + h);
            }
            case LeaseNotification.Malformed m -> {
            }
        }
    }

    @Property(tries = 1000)
    void validReadsRoundTrip(@ForAll("validIds") String id, @ForAll @IntRange(min = 1) int consumers,
            @ForAll("nonceOrNone") long nonce) {
        LeaseNotification.Read read = new LeaseNotification.Read(id, consumers, nonce);
        assertEquals(read, LeaseNotification.parse(read.encode()));
    }

    @Property(tries = 1000)
    void validHeartbeatsRoundTrip(@ForAll("heartbeatIds") List<String> ids) {
        LeaseNotification.Heartbeat hb = new LeaseNotification.Heartbeat(ids);
        assertEquals(hb, LeaseNotification.parse(hb.encode()));
    }

    @Property(tries = 1000)
    void readsWithBadNumbersAreMalformed(@ForAll("validIds") String id,
            @ForAll("badNumbers") Tuple.Tuple2<String, String> numbers) {
        String text = id + ":" + numbers.get1() + (numbers.get2() == null ? "" : ":" + numbers.get2());
        assertInstanceOf(LeaseNotification.Malformed.class,
                LeaseNotification.parse(text.getBytes(StandardCharsets.UTF_8)), text);
    }

    @Property(tries = 1000)
    void anIdCanTravelInANotificationIffItIsValid(@ForAll("anyIds") String id) {
        LeaseNotification.Read read = new LeaseNotification.Read(id, 2, 7);
        LeaseNotification.Read unverified = new LeaseNotification.Read(id, 2, LeaseNotification.NO_NONCE);
        LeaseNotification.Heartbeat hb = new LeaseNotification.Heartbeat(List.of(id));
        boolean valid = RequestIds.isValid(id);
        String d = ProtocolArbitraries.describe(id);
        assertEquals(valid, read.equals(LeaseNotification.parse(read.encode())), "read of " + d);
        assertEquals(valid, unverified.equals(LeaseNotification.parse(unverified.encode())), "unverified read of " + d);
        assertEquals(valid, hb.equals(LeaseNotification.parse(hb.encode())), "heartbeat of " + d);
    }

    @Provide
    Arbitrary<String> validIds() {
        return ProtocolArbitraries.validRequestIds();
    }

    @Provide
    Arbitrary<String> anyIds() {
        return Arbitraries.oneOf(ProtocolArbitraries.nastyStrings(300), ProtocolArbitraries.validRequestIds());
    }

    @Provide
    Arbitrary<Long> nonceOrNone() {
        return Arbitraries.oneOf(Arbitraries.just(LeaseNotification.NO_NONCE),
                Arbitraries.longs().between(1, NONCE_LIMIT - 1));
    }

    @Provide
    Arbitrary<List<String>> heartbeatIds() {
        return ProtocolArbitraries.validRequestIds().list().ofMinSize(1).ofMaxSize(20);
    }

    /** (consumers, nonce or null): at least one of them out of its range, overflowing or not a number. */
    @Provide
    Arbitrary<Tuple.Tuple2<String, String>> badNumbers() {
        Arbitrary<String> goodConsumers = Arbitraries.integers().between(1, Integer.MAX_VALUE).map(String::valueOf);
        Arbitrary<String> badConsumers = Arbitraries.oneOf(
                Arbitraries.integers().between(Integer.MIN_VALUE, 0).map(String::valueOf),
                Arbitraries.longs().greaterOrEqual(1L + Integer.MAX_VALUE).map(String::valueOf),
                Arbitraries.of("", " 1", "1 ", "1.0", "1e3", "0x1", "-", "99999999999999999999", "NaN", "one"));
        Arbitrary<String> goodNonce = Arbitraries.longs().between(1, NONCE_LIMIT - 1).map(String::valueOf);
        Arbitrary<String> badNonce = Arbitraries.oneOf(
                Arbitraries.longs().between(Long.MIN_VALUE, 0).map(String::valueOf),
                Arbitraries.longs().greaterOrEqual(NONCE_LIMIT).map(String::valueOf),
                Arbitraries.of("", "0", "-0", "1.0", "9223372036854775808", "99999999999999999999999", "1,2", "x"));
        return Arbitraries.oneOf(
                Combinators.combine(badConsumers, goodNonce.injectNull(0.5)).as(Tuple::of),
                Combinators.combine(goodConsumers, badNonce).as(Tuple::of),
                Combinators.combine(badConsumers, badNonce).as(Tuple::of));
    }

    /**
     * Bytes near the grammar (ids, separators, numbers at and past every limit, non-ASCII digits and
     * signs, invalid UTF-8), random bytes, and huge inputs up to 64 KiB.
     */
    @Provide
    Arbitrary<byte[]> hostileMessages() {
        Arbitrary<byte[]> token = Arbitraries.frequencyOf(
                Tuple.of(4, ProtocolArbitraries.validRequestIds().map(ProtocolArbitraries::utf8)),
                Tuple.of(3, Arbitraries.of("HB:", ":", ",", "HB", "0", "1", "7", "-1", "+1", "01", "\u0661",
                        "2147483647", "2147483648", "-2147483648", "9007199254740991", "9007199254740992",
                        "9223372036854775807", "9223372036854775808", "\u0000", "\n", "\u0085", " ", "\u3000")
                        .map(ProtocolArbitraries::utf8)),
                Tuple.of(2, Arbitraries.longs().map(l -> ProtocolArbitraries.utf8(Long.toString(l)))),
                Tuple.of(1, ProtocolArbitraries.nastyStrings(12).map(ProtocolArbitraries::utf8)),
                Tuple.of(1, Arbitraries.of(new byte[] {(byte) 0xff}, new byte[] {(byte) 0xc0, (byte) 0x80},
                        new byte[] {(byte) 0xed, (byte) 0xa0, (byte) 0x80}, new byte[] {(byte) 0xe2, (byte) 0x82},
                        new byte[] {(byte) 0xef, (byte) 0xbf, (byte) 0xbd})));
        Arbitrary<byte[]> nearGrammar = token.list().ofMaxSize(12).map(LeaseNotificationPropertiesTest::concat);
        Arbitrary<byte[]> random = Arbitraries.bytes().array(byte[].class).ofMaxSize(64);
        Arbitrary<byte[]> huge = Combinators.combine(token.list().ofMinSize(1).ofMaxSize(4),
                Arbitraries.integers().between(1, 64 * 1024)).as((parts, size) -> {
                    byte[] unit = concat(parts);
                    ByteArrayOutputStream out = new ByteArrayOutputStream(size + unit.length);
                    while (out.size() < size && unit.length > 0) {
                        out.writeBytes(unit);
                    }
                    return out.toByteArray();
                });
        Arbitrary<byte[]> hugeHeartbeat = Arbitraries.integers().between(1, 64 * 1024 / 8)
                .map(n -> ProtocolArbitraries.utf8("HB:" + "req-1,".repeat(n) + "req-1"));
        return Arbitraries.frequencyOf(Tuple.of(14, nearGrammar), Tuple.of(4, random), Tuple.of(1, huge),
                Tuple.of(1, hugeHeartbeat));
    }

    private static byte[] concat(List<byte[]> parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        parts.forEach(out::writeBytes);
        return out.toByteArray();
    }
}
