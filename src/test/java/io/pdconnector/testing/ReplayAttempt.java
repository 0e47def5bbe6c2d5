package io.pdconnector.testing;

import io.pdconnector.producer.Lease;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import java.util.HashSet;
import java.util.Set;

/** One attempt of a trail (a0, a1, a2) as the replay knows it on the Java side. */
final class ReplayAttempt {

    final int index;
    final String requestId;
    final int[] tokens;
    KvTransferParams params;
    /** Expired, aborted or dropped by a restart: from then on a decline is legitimate. */
    boolean lost;
    boolean duplicated;
    /** The trail ended its pull before it was decided (the model's timeout, abort or producer gone). */
    boolean endedEarly;
    final Set<Integer> deliveredTo = new HashSet<>();
    /** CFG_GRANT: bound by the engine to granted blocks and a granted slot; P holds no lease until the commit. */
    boolean viaGrant;
    /** CFG_GRANT: P applied the engine's commit, so the attempt's lease is in P's table. */
    boolean committed;
    /** CFG_GRANT: the engine's copy of the KV into the granted blocks is done. */
    boolean copied;
    ReplayPull pull;

    ReplayAttempt(int index, String requestId, int[] tokens) {
        this.index = index;
        this.requestId = requestId;
        this.tokens = tokens;
    }

    /** This attempt's lease on {@code p}, or null: the id's lease counts only if it has this nonce. */
    Lease lease(ProducerFixture p) {
        Lease l = p.lease(requestId);
        return l != null && params != null && params.hasLease() && l.nonce() == params.remoteLeaseNonce() ? l : null;
    }

    /** How D's heartbeats name this attempt's lease: {@code <id>:<nonce>}, or the id alone without a slot. */
    String leaseRef() {
        return requestId + (params != null && params.hasLease() ? ":" + params.remoteLeaseNonce() : "");
    }

    @Override
    public String toString() {
        return "a" + index;
    }
}
