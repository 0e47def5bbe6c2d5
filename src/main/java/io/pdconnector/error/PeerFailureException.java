package io.pdconnector.error;

/** A peer could not be reached or answered wrongly (502). */
public final class PeerFailureException extends PdException {

    public PeerFailureException(String message, Throwable cause) {
        super("peer-unreachable", message, null, cause);
    }
}
