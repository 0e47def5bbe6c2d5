package io.pdconnector.consumer;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.reference.ReferenceEngine;
import io.pdconnector.transfer.RegisteredRegion;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferEngine;

/**
 * One decode rank: its agent and the KV region pulled blocks land in. The region is a shared file when the
 * config names a directory for it ({@link ConsumerConfig#kvFile}), so a local engine reads a pull's blocks in
 * place: created and zeroed here, locked while mapped (a second D with the same engine id fails to start) and
 * unlinked at {@link #close}, as P's files are.
 */
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
            RegisteredRegion kv = config.kvFile(rank).isPresent()
                    ? agent.allocateShared("kv", config.kvFile(rank).get(), bytes)
                    : agent.allocate("kv", bytes);
            return new ConsumerRank(rank, agent, kv);
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

    KvRegion region() {
        return new KvRegion(rank, kv.sharedFile(), kv.length());
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
