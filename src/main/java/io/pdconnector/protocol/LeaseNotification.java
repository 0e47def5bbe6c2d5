package io.pdconnector.protocol;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * The notifications a decoder sends a prefill rank: a read notification
 * {@code <req_id>:<consumers>[:<nonce>]} (no nonce when the decoder does not verify, L10) or a
 * heartbeat {@code HB:<id>,<id>,...}. Request ids therefore may not contain ':' or ','.
 */
public sealed interface LeaseNotification {

    String HEARTBEAT_PREFIX = "HB:";
    long NO_NONCE = 0;

    record Read(String requestId, int consumers, long nonce) implements LeaseNotification {
        public byte[] encode() {
            String text = requestId + ":" + consumers + (nonce == NO_NONCE ? "" : ":" + nonce);
            return text.getBytes(StandardCharsets.UTF_8);
        }
    }

    record Heartbeat(List<String> requestIds) implements LeaseNotification {
        public byte[] encode() {
            return (HEARTBEAT_PREFIX + String.join(",", requestIds)).getBytes(StandardCharsets.UTF_8);
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
            List<String> ids = Arrays.asList(text.substring(HEARTBEAT_PREFIX.length()).split(",", -1));
            return ids.stream().allMatch(RequestIds::isValid) ? new Heartbeat(ids) : new Malformed(text);
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

    /** A positive number as encode() writes it (parseInt alone also takes "+1", "01", non-ASCII digits). */
    private static boolean isCanonicalNumber(String s) {
        return !s.isEmpty() && s.charAt(0) != '0' && s.chars().allMatch(c -> c >= '0' && c <= '9');
    }
}
