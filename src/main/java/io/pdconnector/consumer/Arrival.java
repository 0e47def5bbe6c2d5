package io.pdconnector.consumer;

import io.pdconnector.error.StateConflictException;
import org.jboss.logging.Logger;

/**
 * A new pull: its peer handshaken if need be, its params checked against that peer, then queued
 * for local blocks and heartbeated at once, since a queued pull can wait longer than a lease. A
 * decode rank asking for a pull another rank started joins it instead ({@link SharedPulls}). A
 * pull that fails here changes nothing and its caller gets the error; one that a bug strikes after
 * it was taken in is failed through {@link Decider#fail}, which undoes that.
 */
final class Arrival {

    private static final Logger LOG = Logger.getLogger(Arrival.class);

    private final ConsumerState state;
    private final PeerHandshake handshake;
    private final Decider decider;
    private final SharedPulls shared;

    Arrival(ConsumerState state, PeerHandshake handshake, Decider decider, SharedPulls shared) {
        this.state = state;
        this.handshake = handshake;
        this.decider = decider;
        this.shared = shared;
    }

    void arrive(ConsumerCommand.Start s, long now) {
        boolean known = state.pulls.containsKey(s.requestId());
        try {
            admit(s, now);
        } catch (RuntimeException | OutOfMemoryError e) {
            Pull admitted = known ? null : state.pulls.get(s.requestId());
            if (admitted != null) {
                decider.fail(admitted, e);
            } else {
                s.reply().completeExceptionally(e instanceof RuntimeException r ? r
                        : new IllegalStateException("pull " + s.requestId() + " failed on the step loop", e));
            }
        }
    }

    private void admit(ConsumerCommand.Start s, long now) {
        if (s.reply().isCancelled()) { // its caller is gone before it arrived: nothing to start
            state.counters.callerGone.incrementAndGet();
            LOG.debugf("pull %s not started: its caller went away before it arrived", s.requestId());
            return;
        }
        Pull known = state.pulls.get(s.requestId());
        if (known != null) {
            if (s.decodeRank().isEmpty()) {
                throw new StateConflictException(s.requestId(), "request " + s.requestId()
                        + " is already being pulled");
            }
            shared.join(known, s, s.decodeRank().getAsInt());
            return;
        }
        RemotePeer peer = handshake.peerFor(s.params().remoteEngineId());
        PullValidation.requireFitsPeer(state.verification, s.params(), peer);
        DecodeRanks ranks = s.decodeRank().isPresent()
                ? new DecodeRanks(state.config.tpSize(), s.decodeRank().getAsInt()) : null;
        Pull pull = new Pull(s.requestId(), s.tokens(), s.params(), peer,
                now + state.config.pullTimeout().toMillis(), s.reply(), ranks);
        state.pulls.put(pull.requestId(), pull);
        state.queued.add(pull);
        if (state.verification.heartbeats(s.params())) {
            peer.startHeartbeating(pull, now);
        }
    }
}
