package io.pdconnector.consumer;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.reference.ReferenceEngine;
import io.pdconnector.transfer.RegisteredRegion;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferEngine;

/** One decode rank: its agent and the KV region pulled blocks land in. */
final class ConsumerRank {

    private final int rank;
    private final TransferAgent agent;
    private final RegisteredRegion kv;

    private ConsumerRank(int rank, TransferAgent agent, RegisteredRegion kv) {
        this.rank = rank;
        this.agent = agent;
        this.kv = kv;
    }

    static ConsumerRank open(TransferEngine engine, ConsumerConfig config, int rank) {
        TransferAgent agent = engine.createAgent(config.engineId() + "-d" + rank);
        try {
            long bytes = config.numBlocks() * config.geometry().blockBytes(config.tpSize());
            return new ConsumerRank(rank, agent, agent.allocate("kv", bytes));
        } catch (RuntimeException e) {
            agent.close();
            throw e;
        }
    }

    int rank() {
        return rank;
    }

    TransferAgent agent() {
        return agent;
    }

    RegisteredRegion kv() {
        return kv;
    }

    /** No blocks: the pull read nothing (D's own prefix cache holds the prompt), so there is nothing to write. */
    void recompute(ReferenceEngine reference, int[] blocks, int[] tokens, int tp) {
        if (blocks.length == 0) {
            return;
        }
        reference.write(kv.segment(), blocks, tokens, tp, rank);
    }

    /** Releases the KV region and closes the agent, which refuses while a peer's handles are held. */
    void close() {
        agent.deregister(kv);
        agent.close();
    }
}
