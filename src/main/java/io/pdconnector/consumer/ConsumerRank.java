package io.pdconnector.consumer;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.reference.ReferenceEngine;
import io.pdconnector.transfer.KvPools;
import io.pdconnector.transfer.PoolShare;
import io.pdconnector.transfer.RankKv;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferEngine;
import java.util.Optional;

/**
 * One decode rank: its agent and the KV region pulled blocks land in. The region is a shared file when the
 * config names a directory for it ({@link ConsumerConfig#kvFile}), so a local engine reads a pull's blocks in
 * place: created and zeroed here, locked while mapped (a second D with the same engine id fails to start) and
 * unlinked at {@link #close}, as P's files are. Under {@code pd.kv.memory=vram} the region is a pool on the
 * rank's GPU instead ({@link RankKv}), which the engine's plugin opens over CUDA IPC.
 */
final class ConsumerRank {

    private final int rank;
    private final TransferAgent agent;
    private final RankKv kv;

    private ConsumerRank(int rank, TransferAgent agent, RankKv kv) {
        this.rank = rank;
        this.agent = agent;
        this.kv = kv;
    }

    static ConsumerRank open(TransferEngine engine, ConsumerConfig config, int rank) {
        return open(engine, config, rank, Optional.empty());
    }

    /** With {@code pools}, the KV region is the rank's VRAM pool, registered with this rank's agent. */
    static ConsumerRank open(TransferEngine engine, ConsumerConfig config, int rank, Optional<KvPools> pools) {
        TransferAgent agent = engine.createAgent(config.engineId() + "-d" + rank);
        try {
            long bytes = config.numBlocks() * config.geometry().blockBytes(config.tpSize());
            RankKv kv = RankKv.open(agent, rank, config.kvFile(rank), bytes, pools);
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

    RankKv kv() {
        return kv;
    }

    /** What the engine's plugin opens, for a rank whose KV is a VRAM pool. */
    Optional<PoolShare> poolShare() {
        return kv.share(rank);
    }

    KvRegion region() {
        return new KvRegion(rank, kv.sharedFile(), kv.length());
    }

    /** No blocks: the pull read nothing (D's own prefix cache holds the prompt), so there is nothing to write. */
    void recompute(ReferenceEngine reference, int[] blocks, int[] tokens, int tp) {
        if (blocks.length == 0) {
            return;
        }
        reference.write(kv.hostSegment("the reference engine's recompute"), blocks, tokens, tp, rank);
    }

    /**
     * Releases the KV region (a VRAM pool: deregistered, then freed) and closes the agent, which refuses while a
     * peer's handles are held.
     */
    void close() {
        kv.release(agent);
        agent.close();
    }
}
