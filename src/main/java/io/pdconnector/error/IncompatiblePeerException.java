package io.pdconnector.error;

/** A peer's metadata says it cannot exchange KV with this instance (422); nothing was loaded. */
public non-sealed class IncompatiblePeerException extends PdException {

    public IncompatiblePeerException(String message) {
        super("incompatible-peer", message, null, null);
    }
}
