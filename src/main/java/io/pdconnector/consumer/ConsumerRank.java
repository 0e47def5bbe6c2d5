package io.pdconnector.consumer;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.reference.ReferenceEngine;
import io.pdconnector.transfer.KvPools;
import io.pdconnector.transfer.PoolShare;
import io.pdconnector.transfer.RankKv;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferEngine;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Optional;

/**
 * One decode rank: its agent and the KV region pulled blocks land in. The region is a shared file when the
 * config names a directory for it ({@link ConsumerConfig#kvFile}), so a local engine reads a pull's blocks in
 * place: created and zeroed here, locked while mapped (a second D with the same engine id fails to start) and
 * unlinked at {@link #close}, as P's files are. Under {@code pd.kv.memory=vram} the region is a pool on the
 * rank's GPU instead ({@link RankKv}), which the engine's plugin opens over CUDA IPC.
 *
 * <p>A shared file carries, after the region's blocks, the rank's epoch table: one little-endian 64-bit word
 * per block, the epoch of the pull that last got the block ({@link ConsumerState#giveBlocks}), written before
 * any READ can land in it. The engine reads a pull's blocks, then their epochs: all still the pull's epoch
 * means no later pull had the blocks while it read, so it need not wait for its release to trust the copy.
 */
final class ConsumerRank {

    /** Aligned, so that an engine never reads half a store: the table starts at a multiple of the block size. */
    private static final ValueLayout.OfLong EPOCH = ValueLayout.JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final int rank;
    private final TransferAgent agent;
    private final RankKv kv;
    /** The region's KV bytes: the blocks, without the epoch table after them. */
    private final long kvBytes;
    /** The epoch table (empty: none, when the region is not a shared file). */
    private final MemorySegment epochs;

    private ConsumerRank(int rank, TransferAgent agent, RankKv kv, long kvBytes, long tableBytes) {
        this.rank = rank;
        this.agent = agent;
        this.kv = kv;
        this.kvBytes = kvBytes;
        this.epochs = tableBytes == 0 ? MemorySegment.NULL
                : kv.hostSegment("the epoch table").asSlice(kvBytes, tableBytes);
    }

    static ConsumerRank open(TransferEngine engine, ConsumerConfig config, int rank) {
        return open(engine, config, rank, Optional.empty());
    }

    /** With {@code pools}, the KV region is the rank's VRAM pool, registered with this rank's agent. */
    static ConsumerRank open(TransferEngine engine, ConsumerConfig config, int rank, Optional<KvPools> pools) {
        TransferAgent agent = engine.createAgent(config.engineId() + "-d" + rank);
        try {
            long bytes = config.numBlocks() * config.geometry().blockBytes(config.tpSize());
            Optional<Path> file = config.kvFile(rank);
            long tableBytes = file.isPresent() && pools.isEmpty() ? (long) config.numBlocks() * Long.BYTES : 0;
            RankKv kv = RankKv.open(agent, rank, file, bytes + tableBytes, pools);
            return new ConsumerRank(rank, agent, kv, bytes, tableBytes);
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
        return new KvRegion(rank, kv.sharedFile(), kvBytes);
    }

    boolean hasEpochTable() {
        return epochs.byteSize() > 0;
    }

    /**
     * Loop thread, before any READ into {@code blocks} is posted: they are {@code epoch}'s now. The fence
     * keeps these stores ahead of every later write into the blocks (the READs the loop posts next, the
     * recompute's), so an engine that reads the blocks' bytes, then their epochs, sees a changed epoch
     * whenever a later pull's bytes may be among those it read.
     */
    void stampEpochs(int[] blocks, long epoch) {
        if (!hasEpochTable()) {
            return;
        }
        for (int block : blocks) {
            epochs.setAtIndex(EPOCH, block, epoch);
        }
        VarHandle.fullFence();
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
