package io.pdconnector.protocol;

import java.util.List;
import java.util.Objects;

/**
 * One start of a producer as the registry announces it: its engine id, the epoch that start drew,
 * and its ranks' handshake metadata in rank order. A new epoch under a known engine id is a restart:
 * everything D loaded for the old one is gone before anything is read from the new one.
 */
public record ProducerIncarnation(String engineId, String epoch, List<HandshakeMetadata> ranks) {

    public ProducerIncarnation {
        Objects.requireNonNull(engineId, "engineId");
        Objects.requireNonNull(epoch, "epoch");
        ranks = List.copyOf(ranks);
        if (ranks.isEmpty()) {
            throw new IllegalArgumentException("producer " + engineId + " has no ranks");
        }
    }

    /** The agent name a producer's rank must publish: agent names are bound to their engine id. */
    public static String agentName(String engineId, int rank) {
        return engineId + "-p" + rank;
    }
}
