package io.pdconnector.controlplane;

/** The handshake metadata of a peer could not be fetched (down, wrong address, not pd-connector). */
public final class PeerUnreachableException extends RuntimeException {

    public PeerUnreachableException(String message, Throwable cause) {
        super(message, cause);
    }
}
