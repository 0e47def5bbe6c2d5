package io.pdconnector.error;

/**
 * A pull names a producer the registry does not vouch for: no such engine ({@code unknown_peer}),
 * or its params give another address than the engine's record ({@code peer_mismatch}). Nothing was
 * contacted and nothing changed (409).
 */
public final class UntrustedPeerException extends PdException {

    public static final String UNKNOWN_PEER = "unknown_peer";
    public static final String PEER_MISMATCH = "peer_mismatch";

    private UntrustedPeerException(String reason, String message) {
        super(reason, message, null, null);
    }

    public static UntrustedPeerException unknown(String engineId) {
        return new UntrustedPeerException(UNKNOWN_PEER, "no producer " + engineId
                + " is registered; a decoder pulls only from producers its registry lists");
    }

    public static UntrustedPeerException mismatch(String engineId, String recorded) {
        return new UntrustedPeerException(PEER_MISMATCH, "the params give another address for " + engineId
                + " than its registry record (" + recorded + "); they were not produced by that engine");
    }
}
