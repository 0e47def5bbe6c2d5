package io.pdconnector.consumer;

import io.pdconnector.error.IncompatiblePeerException;
import io.pdconnector.error.PdException;
import io.pdconnector.error.UnavailableException;
import io.pdconnector.error.UntrustedPeerException;
import io.pdconnector.protocol.MetadataDirectory;
import io.pdconnector.protocol.ProducerIncarnation;
import java.util.List;
import java.util.Objects;
import org.jboss.logging.Logger;

/**
 * Keeps one {@link RemotePeer} per producer, matching that producer's current incarnation in the
 * registry, and at most {@code pd.consumer.max-peers} of them. The registry's announcements
 * handshake ahead of any pull; a pull that arrives first handshakes itself (counted).
 */
final class PeerHandshake {

    private static final Logger LOG = Logger.getLogger(PeerHandshake.class);

    private final ConsumerState state;
    private final MetadataDirectory registry;
    private final Decider decider;

    PeerHandshake(ConsumerState state, MetadataDirectory registry, Decider decider) {
        this.state = state;
        this.registry = registry;
        this.decider = decider;
    }

    /** The registry announced {@code incarnation}: loaded now, replacing an older one. */
    Void announced(ProducerIncarnation incarnation) {
        RemotePeer known = state.peers.get(incarnation.engineId());
        if (known == null || !known.epoch().equals(incarnation.epoch())) {
            install(incarnation, known);
        }
        return null;
    }

    /** The registry no longer lists {@code engineId}: its undecided pulls are declined, its agents dropped. */
    Void withdrawn(String engineId) {
        RemotePeer known = state.peers.get(engineId);
        if (known != null) {
            drop(known, DeclineReason.PEER_GONE);
        }
        return null;
    }

    /** The peer a new pull reads from: the registry's current incarnation of {@code engineId}. */
    RemotePeer peerFor(String engineId) {
        RemotePeer known = state.peers.get(engineId);
        ProducerIncarnation current = registry.lookup(engineId).orElse(null);
        if (current == null) {
            if (known != null) {
                drop(known, DeclineReason.PEER_GONE); // its withdrawal has not reached the loop yet
            }
            throw UntrustedPeerException.unknown(engineId);
        }
        if (known != null && known.epoch().equals(current.epoch())) {
            if (known.refusal() != null) {
                throw IncompatiblePeerException.vramHostPath(known.refusal());
            }
            return known;
        }
        state.counters.handshakesOnPull.incrementAndGet();
        return install(current, known);
    }

    /**
     * The handshake, on first contact or after a restart. A restarted peer's agents reuse their names,
     * so the old incarnation is dropped first: its undecided pulls are declined (its memory is gone)
     * and its names are invalidated before the new metadata is loaded under them.
     */
    private RemotePeer install(ProducerIncarnation incarnation, RemotePeer old) {
        if (old != null) {
            drop(old, DeclineReason.PEER_RESTARTED);
        }
        makeRoom();
        RemotePeer peer;
        try {
            peer = RemotePeer.handshake(incarnation, state.ranks, state.config, state.verification,
                    this::loadedByAnother);
        } catch (PdException e) {
            state.counters.peersRefused.incrementAndGet();
            LOG.warnf("producer %s (epoch %s) refused: %s", incarnation.engineId(), incarnation.epoch(),
                    e.getMessage());
            throw e;
        }
        state.peers.put(incarnation.engineId(), peer);
        state.counters.handshakes.incrementAndGet();
        return peer;
    }

    /** Whether {@code agentName} is loaded for a handshaken peer: such a name is never invalidated for another. */
    private boolean loadedByAnother(String agentName) {
        return state.peers.values().stream().anyMatch(p -> p.loadedNames().contains(agentName));
    }

    /** Evicts the least recently used peers no pull refers to, down to one below the limit. */
    private void makeRoom() {
        int limit = state.config.maxPeers();
        for (RemotePeer p : List.copyOf(state.peers.values())) {
            if (state.peers.size() < limit) {
                return;
            }
            if (!inUse(p)) {
                drop(p, null);
                state.counters.peersEvicted.incrementAndGet();
            }
        }
        if (state.peers.size() >= limit) {
            throw new UnavailableException("peer-cache-full", "all " + limit + " producers this decoder keeps (pd.consumer.max-peers)"
                    + " have pulls in flight; retry when one is done");
        }
    }

    private boolean inUse(RemotePeer peer) {
        return state.pulls.values().stream().anyMatch(pull -> pull.peer() == peer);
    }

    private void drop(RemotePeer peer, DeclineReason why) {
        for (Pull pull : List.copyOf(state.pulls.values())) {
            if (pull.peer() == peer && !pull.state().decided()) {
                decider.decide(pull, Objects.requireNonNull(why, "an evicted peer had an undecided pull"));
            }
        }
        state.peers.remove(peer.engineId());
        state.observer.readTransportsForgotten(peer.engineId());
        peer.release();
    }
}
