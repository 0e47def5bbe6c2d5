package io.pdconnector.nixl;

import io.pdconnector.transfer.TransferException;

/**
 * The two checks every downcall site shares: agent names are checked in Java before they reach the
 * helper's fixed-size buffers, and a negative status becomes its typed {@link TransferException}.
 */
final class NativeChecks {

    /** Agent name buffer, NUL included: names are engine ids and ranks, far shorter. */
    static final int NAME_CAPACITY = 256;

    private NativeChecks() {
    }

    static void checkName(String name) {
        if (name == null || name.isBlank() || name.length() >= NAME_CAPACITY || name.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("agent name must be 1-" + (NAME_CAPACITY - 1)
                    + " characters without NUL, got " + name);
        }
        for (int i = 0; i < name.length(); i++) { // a loop, not a CharsetEncoder: this runs for every notification
            if (name.charAt(i) > 0x7f) {
                throw new IllegalArgumentException("agent name must be ASCII, got " + name);
            }
        }
    }

    /**
     * As {@link #check(String, int)} for a call on a peer's handle, {@code call(peer)}: the label is
     * built only on failure, as this runs for every READ and every poll.
     */
    static int check(String call, String peer, int rc) {
        if (rc < 0) {
            throw TransferException.of(call + "(" + peer + ")", rc);
        }
        return rc;
    }

    /** Returns a non-negative status (some calls report progress with it); throws for a negative one. */
    static int check(String call, int rc) {
        if (rc < 0) {
            throw TransferException.of(call, rc);
        }
        return rc;
    }
}
