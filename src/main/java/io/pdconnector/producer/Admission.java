package io.pdconnector.producer;

import io.pdconnector.error.StateConflictException;
import io.pdconnector.error.UnavailableException;
import io.pdconnector.protocol.LeaseNotification;
import java.util.OptionalInt;

/**
 * Schedules the requests admitted since the last step: blocks, then a slot and its nonce, and a
 * slot write queued on every rank (applied by {@link SlotOps} in this same step, L2). L4: a request
 * that finds no free slot still runs, but without lease fields.
 */
final class Admission {

    private final ProducerState state;
    private final RequestGuard guard;

    Admission(ProducerState state, RequestGuard guard) {
        this.state = state;
        this.guard = guard;
    }

    /** At most {@code max_num_seqs} a step, so one burst cannot take every block in one go. */
    int scheduleNew() {
        int n = 0;
        int max = state.config.maxNumSeqs();
        for (ProducerCommand.Admission a : state.pending) {
            if (n >= max) {
                a.reply().completeExceptionally(UnavailableException.noFreeBlocks(
                        "more than max_num_seqs=" + max + " new requests in one step; retry"));
                continue;
            }
            n += guard.guard(a.requestId(), a.reply(), () -> {
                schedule(a);
                return 1;
            });
        }
        state.pending.clear();
        return n;
    }

    private void schedule(ProducerCommand.Admission a) {
        if (state.leases.contains(a.requestId())) {
            a.reply().completeExceptionally(new StateConflictException(a.requestId(), "request " + a.requestId()
                    + " still holds a lease; an id can be reused only after its lease is freed"));
            return;
        }
        int[] blockIds = state.blocks.allocate(state.config.geometry().blocksFor(a.numTokens()));
        if (blockIds == null) {
            a.reply().completeExceptionally(UnavailableException.noFreeBlocks("no free KV blocks for "
                    + a.numTokens() + " tokens (" + state.blocks.freeCount() + " of " + state.blocks.capacity()
                    + " free)"));
            return;
        }
        Lease lease = reserve(a, blockIds);
        if (lease.hasSlot()) {
            state.ranks.forEach(r -> r.queueWrite(lease));
        }
        state.scheduled.put(lease, a);
    }

    /** A nonce is drawn only with a slot: a slotless lease has none to write or check. */
    private Lease reserve(ProducerCommand.Admission a, int[] blockIds) {
        OptionalInt slot = state.slots.acquire();
        long nonce = slot.isPresent() ? state.nonces.next() : LeaseNotification.NO_NONCE;
        return state.leases.reserve(a.requestId(), blockIds, a.numTokens(), slot.orElse(Lease.NO_SLOT), nonce);
    }
}
