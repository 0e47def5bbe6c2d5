package io.pdconnector.consumer;

import io.pdconnector.error.StateConflictException;

/**
 * A new pull: its peer handshaken if need be, its params checked against that peer, then queued
 * for local blocks and heartbeated at once, since a queued pull can wait longer than a lease. A
 * pull that fails here changes nothing and its caller gets the error.
 */
final class Arrival {

    private final ConsumerState state;
    private final PeerHandshake handshake;

    Arrival(ConsumerState state, PeerHandshake handshake) {
        this.state = state;
        this.handshake = handshake;
    }

    void arrive(ConsumerCommand.Start s, long now) {
        try {
            admit(s, now);
        } catch (RuntimeException e) {
            s.reply().completeExceptionally(e);
        }
    }

    private void admit(ConsumerCommand.Start s, long now) {
        if (state.pulls.containsKey(s.requestId())) {
            throw new StateConflictException(s.requestId(), "request " + s.requestId() + " is already being pulled");
        }
        RemotePeer peer = handshake.peerFor(s.params().remoteEngineId());
        PullValidation.requireFitsPeer(state.verification, s.params(), peer);
        Pull pull = new Pull(s.requestId(), s.tokens(), s.params(), peer,
                now + state.config.pullTimeout().toMillis(), s.reply());
        state.pulls.put(pull.requestId(), pull);
        state.queued.add(pull);
        if (state.verification.heartbeats(s.params())) {
            peer.startHeartbeating(pull, now);
        }
    }
}
