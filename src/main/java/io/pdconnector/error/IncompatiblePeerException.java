package io.pdconnector.error;

/** A peer's metadata says it cannot exchange KV with this instance (422); nothing was loaded. */
public non-sealed class IncompatiblePeerException extends PdException {

    public IncompatiblePeerException(String message) {
        this("incompatible-peer", message);
    }

    private IncompatiblePeerException(String reason, String message) {
        super(reason, message, null, null);
    }

    /** The peer's GPU memory reaches this decoder only over a host path, which pd.kv.vram-host-path refuses. */
    public static IncompatiblePeerException vramHostPath(String message) {
        return new IncompatiblePeerException("vram-host-path", message);
    }
}
