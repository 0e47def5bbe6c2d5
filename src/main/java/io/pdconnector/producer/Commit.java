package io.pdconnector.producer;

/**
 * An engine binds a request to granted blocks and a granted lease slot, after its KV is in the blocks
 * and possibly after it handed the params out: P exports the lease at once. {@code slot} is
 * {@link Lease#NO_SLOT} (and {@code nonce} 0) only on an instance without lease verification.
 */
public record Commit(String creditId, String requestId, int numTokens, int[] blockIds, int slot, long nonce) {

    public Commit {
        blockIds = blockIds.clone();
    }

    @Override
    public int[] blockIds() {
        return blockIds.clone();
    }
}
