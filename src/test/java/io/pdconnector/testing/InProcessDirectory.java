package io.pdconnector.testing;

import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.protocol.MetadataDirectory;
import io.pdconnector.protocol.ProducerIncarnation;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Many engines' directory in one process, for tests that run several loops side by side: every
 * publish is a new start of that engine (a new epoch), as the service's registry makes it.
 */
public final class InProcessDirectory implements MetadataDirectory {

    private final Map<String, ProducerIncarnation> engines = new ConcurrentHashMap<>();
    private final AtomicLong epochs = new AtomicLong();

    @Override
    public void publish(String engineId, List<HandshakeMetadata> ranks) {
        engines.put(engineId, new ProducerIncarnation(engineId, "e" + epochs.incrementAndGet(), ranks));
    }

    @Override
    public Optional<ProducerIncarnation> lookup(String engineId) {
        return Optional.ofNullable(engines.get(engineId));
    }

    @Override
    public void withdraw(String engineId) {
        engines.remove(engineId);
    }
}
