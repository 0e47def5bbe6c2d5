package io.pdconnector.config;

/**
 * {@link KvConfig#vramHostPath()}: what D does when UCX reports that it reads a peer's GPU memory over a host path
 * (TCP, shared host memory, or copies through host buffers) instead of a GPU transport.
 */
public enum VramHostPath {
    /** The peer is refused until it restarts: no pull of it is served over that path. */
    refuse,
    /** Served at host speed; the transport is still logged and reported. */
    allow
}
