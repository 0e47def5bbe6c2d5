package io.pdconnector.lease;

/** Where a producer-side lease is; {@link Lease#moveTo} is the only place that changes it. */
public enum LeaseState {
    /** Blocks, and maybe a slot and nonce, assigned; the slot write is pending. */
    RESERVED,
    /** Every rank holds the nonce in the slot (L2). */
    SLOT_WRITTEN,
    /** kv_transfer_params handed out; the lease clock runs. */
    EXPORTED,
    /** At least one rank is exiting: zeroing its slot, then reporting finished-sending. */
    RELEASING,
    /** Every rank finished; blocks freed and slot returned. */
    FREED;

    boolean canMoveTo(LeaseState next, boolean hasSlot) {
        return switch (this) {
            case RESERVED -> next == SLOT_WRITTEN && hasSlot || next == EXPORTED && !hasSlot || next == RELEASING;
            case SLOT_WRITTEN -> next == EXPORTED || next == RELEASING;
            case EXPORTED -> next == RELEASING;
            case RELEASING -> next == FREED;
            case FREED -> false;
        };
    }
}
