package io.pdconnector.controlplane;

/** A peer's handshake metadata says it cannot exchange KV with us; nothing was loaded. */
public final class IncompatiblePeerException extends IllegalArgumentException {

    public IncompatiblePeerException(String message) {
        super(message);
    }
}
