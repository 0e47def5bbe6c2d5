package io.pdconnector.protocol;

/**
 * Lease nonces on the wire: positive and below 2^53, so every JSON parser (a JavaScript router's
 * too) keeps them exact. 0 is {@link LeaseNotification#NO_NONCE}: an unverified read notification (L10).
 */
public final class Nonces {

    public static final long LIMIT = 1L << 53;

    private Nonces() {
    }

    public static boolean isValid(long nonce) {
        return nonce > 0 && nonce < LIMIT;
    }
}
