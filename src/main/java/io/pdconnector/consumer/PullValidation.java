package io.pdconnector.consumer;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.error.InvalidInputException;
import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.protocol.InvalidKvTransferParamsException;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.protocol.TokenIds;

/** Checks of a pull's input: against the prompt on the caller's thread, against the peer on the loop. */
final class PullValidation {

    private PullValidation() {
    }

    static void requirePrompt(ConsumerConfig config, int[] tokens, KvTransferParams params) {
        TokenIds.require(tokens);
        if (tokens.length != params.remoteNumTokens()) {
            throw new InvalidKvTransferParamsException("remote_num_tokens is " + params.remoteNumTokens()
                    + " but the prompt has " + tokens.length + " tokens");
        }
        if (params.readsNoBlocks()) {
            return; // the decoder holds the prompt's KV itself; only the lease is checked
        }
        int needed = config.geometry().blocksFor(tokens.length);
        if (params.blockIds().length != needed) {
            throw new InvalidKvTransferParamsException("remote_block_ids has " + params.blockIds().length
                    + " blocks, " + tokens.length + " tokens need " + needed + " (or none: [[]])");
        }
        if (needed > config.numBlocks()) {
            throw InvalidInputException.of("the prompt needs " + needed + " blocks, this decoder has "
                    + config.numBlocks());
        }
    }

    /**
     * Every rank of the peer is read (blocks) and, when verifying, has its slot read, so block ids and
     * the lease slot must fit each rank's published sizes, not only rank 0's.
     */
    static void requireFitsPeer(LeaseVerification verification, KvTransferParams params, RemotePeer peer) {
        if (params.tpSize() != peer.ranks().size()) {
            throw new InvalidKvTransferParamsException("tp_size is " + params.tpSize() + " but engine "
                    + peer.engineId() + " has " + peer.ranks().size() + " ranks");
        }
        int maxBlock = -1;
        for (int b : params.blockIds()) {
            maxBlock = Math.max(maxBlock, b);
        }
        boolean verifies = verification.verifies(params);
        for (HandshakeMetadata rank : peer.ranks()) {
            String where = "engine " + peer.engineId() + " rank " + rank.rank();
            if (maxBlock >= rank.numBlocks()) {
                throw new InvalidKvTransferParamsException("remote_block_ids holds " + maxBlock + ", " + where
                        + " has " + rank.numBlocks() + " blocks");
            }
            if (verifies && !rank.hasSlots()) {
                throw new InvalidKvTransferParamsException("params carry a lease but " + where
                        + " publishes no lease slots");
            }
            if (verifies && params.remoteLeaseSlot() >= rank.slotCount()) {
                throw new InvalidKvTransferParamsException("remote_lease_slot " + params.remoteLeaseSlot()
                        + " is outside " + where + "'s " + rank.slotCount() + " slots");
            }
        }
    }
}
