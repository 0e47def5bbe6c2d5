package io.pdconnector.protocol;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The notifications a decoder sends a prefill rank: a read notification
 * {@code <req_id>:<consumers>[:<nonce>]} or a heartbeat {@code HB:<id>[:<nonce>],<id>[:<nonce>],...}.
 * The nonce is the lease's, from {@code kv_transfer_params}; only a lease without a slot has none
 * ({@link #NO_NONCE}), and a notification naming a lease with a slot without its nonce changes
 * nothing (L11, L12): anyone may learn a request id, only the reader gets the nonce. Request ids
 * therefore may not contain ':' or ','.
 */
public sealed interface LeaseNotification {

    String HEARTBEAT_PREFIX = "HB:";
    long NO_NONCE = 0;

    record Read(String requestId, int consumers, long nonce) implements LeaseNotification {
        public byte[] encode() {
            return new LeaseRef(requestId, nonce).text(":" + consumers).getBytes(StandardCharsets.UTF_8);
        }
    }

    /** A lease as a heartbeat names it: its request id and its nonce ({@link #NO_NONCE}: it has no slot). */
    record LeaseRef(String requestId, long nonce) {

        private String text(String middle) {
            return requestId + middle + (nonce == NO_NONCE ? "" : ":" + nonce);
        }

        /** Parses {@code <id>[:<nonce>]} as a heartbeat carries it; null if it is not one. */
        private static LeaseRef parse(String entry) {
            String[] parts = entry.split(":", -1);
            if (parts.length > 2 || !RequestIds.isValid(parts[0])) {
                return null;
            }
            if (parts.length == 1) {
                return new LeaseRef(parts[0], NO_NONCE);
            }
            long nonce = parseNonce(parts[1]);
            return Nonces.isValid(nonce) ? new LeaseRef(parts[0], nonce) : null;
        }
    }

    record Heartbeat(List<LeaseRef> leases) implements LeaseNotification {
        public byte[] encode() {
            StringBuilder text = new StringBuilder(HEARTBEAT_PREFIX);
            for (LeaseRef lease : leases) {
                text.append(text.length() == HEARTBEAT_PREFIX.length() ? "" : ",").append(lease.text(""));
            }
            return text.toString().getBytes(StandardCharsets.UTF_8);
        }

        /** Bytes one more entry adds to the encoding, separator included. */
        public static int entryBytes(LeaseRef lease) {
            return lease.text("").getBytes(StandardCharsets.UTF_8).length + 1;
        }
    }

    /** Something we cannot parse; counted and dropped, never fatal: any peer can send bytes. */
    record Malformed(String text) implements LeaseNotification {
    }

    /**
     * Reads exactly what {@code encode()} writes: well-formed UTF-8, numbers in ASCII digits without
     * sign or leading zero; anything else is Malformed.
     */
    static LeaseNotification parse(byte[] message) {
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(message)).toString();
        } catch (CharacterCodingException e) {
            return new Malformed(new String(message, StandardCharsets.UTF_8));
        }
        if (text.startsWith(HEARTBEAT_PREFIX)) {
            List<LeaseRef> leases = new ArrayList<>();
            for (String entry : text.substring(HEARTBEAT_PREFIX.length()).split(",", -1)) {
                LeaseRef lease = LeaseRef.parse(entry);
                if (lease == null) {
                    return new Malformed(text);
                }
                leases.add(lease);
            }
            return new Heartbeat(List.copyOf(leases));
        }
        String[] parts = text.split(":", -1);
        try {
            if ((parts.length == 2 || parts.length == 3) && RequestIds.isValid(parts[0])
                    && Arrays.stream(parts, 1, parts.length).allMatch(LeaseNotification::isCanonicalNumber)) {
                int consumers = Integer.parseInt(parts[1]);
                long nonce = parts.length == 3 ? Long.parseLong(parts[2]) : NO_NONCE;
                if (consumers >= 1 && (parts.length == 2 || Nonces.isValid(nonce))) {
                    return new Read(parts[0], consumers, nonce);
                }
            }
        } catch (NumberFormatException e) {
            // falls through to Malformed
        }
        return new Malformed(text);
    }

    /** A nonce as encode() writes it, or {@link #NO_NONCE} (which no valid nonce is) for anything else. */
    private static long parseNonce(String s) {
        try {
            return isCanonicalNumber(s) ? Long.parseLong(s) : NO_NONCE;
        } catch (NumberFormatException e) {
            return NO_NONCE;
        }
    }

    /** A positive number as encode() writes it (parseInt alone also takes "+1", "01", non-ASCII digits). */
    private static boolean isCanonicalNumber(String s) {
        return !s.isEmpty() && s.charAt(0) != '0' && s.chars().allMatch(c -> c >= '0' && c <= '9');
    }
}
