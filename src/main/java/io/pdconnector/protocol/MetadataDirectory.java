package io.pdconnector.protocol;

import java.util.List;
import java.util.Optional;

/**
 * Where instances find each other's handshake metadata: P publishes its ranks when its loop opens
 * and withdraws them when it closes; D looks a producer up by engine id before any READ. The
 * control plane implements it; the loops know only this contract.
 */
public interface MetadataDirectory {

    /** Publishes this start of an engine: its metadata, one entry per rank in rank order. */
    void publish(String engineId, List<HandshakeMetadata> ranks);

    void withdraw(String engineId);

    /** The producer's current incarnation, if the directory knows it as a producer. */
    Optional<ProducerIncarnation> lookup(String engineId);
}
