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
        int needed = config.geometry().blocksFor(tokens.length);
        if (params.blockIds().length != needed) {
            throw new InvalidKvTransferParamsException("remote_block_ids has " + params.blockIds().length
                    + " blocks, " + tokens.length + " tokens need " + needed);
        }
        if (needed > config.numBlocks()) {
            throw InvalidInputException.of("the prompt needs " + needed + " blocks, this decoder has "
                    + config.numBlocks());
        }
    }

    static void requireFitsPeer(LeaseVerification verification, KvTransferParams params, RemotePeer peer) {
        HandshakeMetadata first = peer.ranks().getFirst();
        if (params.tpSize() != peer.ranks().size()) {
            throw new InvalidKvTransferParamsException("tp_size is " + params.tpSize() + " but engine "
                    + peer.engineId() + " has " + peer.ranks().size() + " ranks");
        }
        for (int b : params.blockIds()) {
            if (b >= first.numBlocks()) {
                throw new InvalidKvTransferParamsException("remote_block_ids holds " + b + ", engine "
                        + peer.engineId() + " has " + first.numBlocks() + " blocks");
            }
        }
        if (verification.verifies(params)) {
            if (!first.hasSlots()) {
                throw new InvalidKvTransferParamsException("params carry a lease but engine " + peer.engineId()
                        + " publishes no lease slots");
            }
            if (params.remoteLeaseSlot() >= first.slotCount()) {
                throw new InvalidKvTransferParamsException("remote_lease_slot " + params.remoteLeaseSlot()
                        + " is outside engine " + peer.engineId() + "'s " + first.slotCount() + " slots");
            }
        }
    }
}
