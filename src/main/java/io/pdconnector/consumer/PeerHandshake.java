package io.pdconnector.consumer;

import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.protocol.InvalidKvTransferParamsException;
import io.pdconnector.protocol.MetadataDirectory;
import java.util.List;

/** Keeps one {@link RemotePeer} per prefill engine, matching that engine's current incarnation. */
final class PeerHandshake {

    private final ConsumerState state;
    private final MetadataDirectory registry;
    private final Decider decider;

    PeerHandshake(ConsumerState state, MetadataDirectory registry, Decider decider) {
        this.state = state;
        this.registry = registry;
        this.decider = decider;
    }

    /**
     * The handshake, on first contact or after the peer restarted. A restarted peer's agents reuse
     * their names, so the old incarnation is dropped first: its undecided pulls fail (their source
     * memory is gone) and its names are invalidated before the new metadata is loaded under them.
     */
    RemotePeer peerFor(String engineId) {
        List<HandshakeMetadata> current = registry.lookup(engineId).orElseThrow(() ->
                new InvalidKvTransferParamsException("unknown remote_engine_id " + engineId
                        + ": no such engine in the registry"));
        RemotePeer known = state.peers.get(engineId);
        if (known != null && known.sameIncarnation(current)) {
            return known;
        }
        if (known != null) {
            drop(known);
        }
        RemotePeer peer = RemotePeer.handshake(engineId, current, state.ranks, state.config, state.verification);
        state.peers.put(engineId, peer);
        state.counters.handshakes.incrementAndGet();
        return peer;
    }

    private void drop(RemotePeer peer) {
        for (Pull pull : List.copyOf(state.pulls.values())) {
            if (pull.peer() == peer && !pull.state().decided()) {
                decider.decide(pull, DeclineReason.TRANSFER_FAILED);
            }
        }
        state.peers.remove(peer.engineId());
        peer.release();
    }
}
