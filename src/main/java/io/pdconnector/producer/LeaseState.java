package io.pdconnector.producer;

/**
 * Where a producer-side lease is; {@link Lease#moveTo} is the only place that changes it.
 *
 * <p>A prefill passes RESERVED, SLOT_WRITTEN and WRITING within the step that schedules it. An
 * engine's request (reserve, write, finish) stays in WRITING until its engine finishes it: only
 * WRITING goes to EXPORTED, so a request is exported once, never before its slot is written (L2).
 */
public enum LeaseState {
    /** Blocks, and maybe a slot and nonce, assigned; the slot write is queued for this step. */
    RESERVED,
    /** Every rank holds the nonce in the slot (L2). */
    SLOT_WRITTEN,
    /**
     * The KV is being written into the blocks: by the reference engine within the step, or by an
     * engine until it finishes. The lease clock does not run yet (no decoder knows the request) and
     * heartbeats do not apply; the engine's finish deadline, an abort or shutdown ends it otherwise.
     */
    WRITING,
    /** kv_transfer_params handed out; the lease clock runs. */
    EXPORTED,
    /** At least one rank is exiting: zeroing its slot, then reporting finished-sending. */
    RELEASING,
    /** Every rank finished; blocks freed and slot returned. */
    FREED,
    /**
     * A grant's placeholder ({@link Credit}) whose slot and nonce went, still written, to the request an
     * engine committed: it holds nothing and leaves the table.
     */
    BOUND;

    boolean canMoveTo(LeaseState next, boolean hasSlot) {
        return switch (this) {
            case RESERVED -> next == SLOT_WRITTEN && hasSlot || next == WRITING && !hasSlot || next == RELEASING;
            case SLOT_WRITTEN -> next == WRITING || next == RELEASING;
            case WRITING -> next == EXPORTED || next == RELEASING || next == BOUND && hasSlot;
            case EXPORTED -> next == RELEASING;
            case RELEASING -> next == FREED;
            case FREED, BOUND -> false;
        };
    }
}
