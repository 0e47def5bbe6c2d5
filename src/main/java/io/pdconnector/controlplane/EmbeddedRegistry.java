package io.pdconnector.controlplane;

import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.protocol.MetadataDirectory;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/** The in-process control plane: engine id to the handshake metadata of each of its ranks. */
public final class EmbeddedRegistry implements MetadataDirectory {

    private final Map<String, List<HandshakeMetadata>> engines = new ConcurrentHashMap<>();

    @Override
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

    @Override
    public Optional<List<HandshakeMetadata>> lookup(String engineId) {
        return Optional.ofNullable(engines.get(engineId));
    }

    @Override
    public void withdraw(String engineId) {
        engines.remove(engineId);
    }
}
