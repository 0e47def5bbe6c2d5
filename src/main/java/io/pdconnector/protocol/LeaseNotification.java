package io.pdconnector.protocol;

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

    static LeaseNotification parse(byte[] message) {
        String text = new String(message, StandardCharsets.UTF_8);
        if (text.startsWith(HEARTBEAT_PREFIX)) {
            List<String> ids = Arrays.asList(text.substring(HEARTBEAT_PREFIX.length()).split(","));
            return ids.stream().allMatch(RequestIds::isValid) ? new Heartbeat(ids) : new Malformed(text);
        }
        String[] parts = text.split(":", -1);
        try {
            if ((parts.length == 2 || parts.length == 3) && RequestIds.isValid(parts[0])) {
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
}
