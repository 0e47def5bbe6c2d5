package io.pdconnector.controlplane;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/** The in-process control plane: engine id to the handshake metadata of each of its ranks. */
public final class EmbeddedRegistry {

    private final Map<String, List<HandshakeMetadata>> engines = new ConcurrentHashMap<>();

    /** Publishes (or replaces, after a restart) an engine's metadata, one entry per rank in rank order. */
    public void publish(String engineId, List<HandshakeMetadata> ranks) {
        if (ranks.isEmpty()) {
            throw new IllegalArgumentException("engine " + engineId + " must publish at least one rank");
        }
        for (int i = 0; i < ranks.size(); i++) {
            HandshakeMetadata m = ranks.get(i);
            if (!m.engineId().equals(engineId) || m.rank() != i || m.tpSize() != ranks.size()) {
                throw new IllegalArgumentException("engine " + engineId + " published rank " + m.rank()
                        + " of " + m.engineId() + " (tp " + m.tpSize() + ") at position " + i + " of " + ranks.size());
            }
        }
        engines.put(engineId, List.copyOf(ranks));
    }

    public Optional<List<HandshakeMetadata>> lookup(String engineId) {
        return Optional.ofNullable(engines.get(engineId));
    }

    public void withdraw(String engineId) {
        engines.remove(engineId);
    }
}
