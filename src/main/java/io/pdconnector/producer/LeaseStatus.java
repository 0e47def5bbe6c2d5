package io.pdconnector.producer;

/**
 * One request's lease as the step loop sees it. {@code slot} and {@code nonce} are null without a
 * slot (L4); {@code expiresInMillis} is set once exported (the lease clock), {@code finishInMillis}
 * while an engine is still writing (its finish deadline); negative means due and about to be reaped.
 */
public record LeaseStatus(String requestId, LeaseState state, int numTokens, Integer slot, Long nonce,
        Long expiresInMillis, Long finishInMillis, int[] blockIds, int ranksFinished, int ranks) {

    static LeaseStatus of(Lease lease, long now, int ranks) {
        boolean exported = lease.state() == LeaseState.EXPORTED;
        boolean writing = lease.state() == LeaseState.WRITING;
        return new LeaseStatus(lease.requestId(), lease.state(), lease.numTokens(),
                lease.hasSlot() ? lease.slot() : null, lease.hasSlot() ? lease.nonce() : null,
                exported ? lease.expiresAtMillis() - now : null, writing ? lease.finishByMillis() - now : null,
                lease.blockIds(), lease.ranksFinished(), ranks);
    }

    public LeaseStatus {
        blockIds = blockIds.clone();
    }

    @Override
    public int[] blockIds() {
        return blockIds.clone();
    }
}
