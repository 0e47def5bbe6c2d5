package io.pdconnector.consumer;

import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.protocol.LeaseNotification;

/**
 * L10, {@code kv_lease_verification}, on D. On (the default): a pull needs P's lease fields, and its
 * slots are READ after its block READs and compared before D notifies. Off restores the unverified
 * behaviour: no slot READ. Either way notifications and heartbeats carry the lease's nonce when the
 * params have one (L11, L12: P takes no word for a lease with a slot without it). Every D-side step
 * that depends on the switch asks here.
 */
record LeaseVerification(boolean on) {

    /** Declined as no_lease (L7) once it has local blocks; the policy may still recompute into them. */
    boolean missingLease(KvTransferParams params) {
        return on && !params.hasLease();
    }

    /** A pull about to be declined for a missing lease has no lease to keep alive. */
    boolean heartbeats(KvTransferParams params) {
        return !missingLease(params);
    }

    /** Whether a pull's lease fields are used at all, so must fit the peer's slots. */
    boolean verifies(KvTransferParams params) {
        return on && params.hasLease();
    }

    /** Whether slot channels are prepared and a pull goes through the slot check before it is decided. */
    boolean checksSlots() {
        return on;
    }

    /** The nonce D's notifications and heartbeats for this lease carry. */
    static long nonceOf(KvTransferParams params) {
        return params.hasLease() ? params.remoteLeaseNonce() : LeaseNotification.NO_NONCE;
    }
}
