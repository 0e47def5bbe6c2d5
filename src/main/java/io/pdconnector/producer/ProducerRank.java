package io.pdconnector.producer;

import io.pdconnector.config.ProducerConfig;
import io.pdconnector.memory.SlotArray;
import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.reference.ReferenceEngine;
import io.pdconnector.transfer.KvPools;
import io.pdconnector.transfer.MemoryType;
import io.pdconnector.transfer.NotificationSink;
import io.pdconnector.transfer.PoolShare;
import io.pdconnector.transfer.RankKv;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferEngine;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * One prefill rank: its agent, its KV region and its lease slots. Slot operations are batched per
 * step and applied clears first, then writes (L2); a rank reports finished-sending only for a
 * lease whose slot it has zeroed (L3). The KV region is a shared file when the config names a
 * directory for it, so a local engine can write a request's blocks in place; under
 * {@code pd.kv.memory=vram} it is a pool on the rank's GPU instead ({@link RankKv}).
 */
final class ProducerRank {

    private final int rank;
    private final TransferAgent agent;
    private final RankKv kv;
    private final long blockBytes;
    private final SlotArray slots;
    private final List<Lease> pendingClears = new ArrayList<>();
    private final List<Lease> pendingWrites = new ArrayList<>();

    private ProducerRank(int rank, TransferAgent agent, RankKv kv, long blockBytes, SlotArray slots) {
        this.rank = rank;
        this.agent = agent;
        this.kv = kv;
        this.blockBytes = blockBytes;
        this.slots = slots;
    }

    /** Creates the agent and registers memory; on failure releases what it took and says why. */
    static ProducerRank open(TransferEngine engine, ProducerConfig config, int rank) {
        return open(engine, config, rank, Optional.empty());
    }

    /** With {@code pools}, the KV region is the rank's VRAM pool, registered with this rank's agent. */
    static ProducerRank open(TransferEngine engine, ProducerConfig config, int rank, Optional<KvPools> pools) {
        TransferAgent agent = engine.createAgent(config.engineId() + "-p" + rank);
        RankKv kv = null;
        try {
            long blockBytes = config.geometry().blockBytes(config.tpSize());
            long bytes = config.numBlocks() * blockBytes;
            kv = RankKv.open(agent, rank, config.kvFile(rank), bytes, pools);
            SlotArray slots = config.leaseVerification() ? registerSlots(agent, config, rank) : null;
            return new ProducerRank(rank, agent, kv, blockBytes, slots);
        } catch (RuntimeException e) {
            if (kv != null) {
                kv.release(agent);
            }
            agent.close();
            throw e;
        }
    }

    private static SlotArray registerSlots(TransferAgent agent, ProducerConfig config, int rank) {
        try {
            return SlotArray.register(agent, config.effectiveLeaseSlots());
        } catch (RuntimeException e) {
            throw new IllegalStateException("kv_lease_verification is on but rank " + rank + " of "
                    + config.engineId() + " cannot register its " + config.effectiveLeaseSlots()
                    + " lease slots (" + e.getMessage() + "); refusing to start unverified."
                    + " Set kv_lease_verification=false to run without lease checks", e);
        }
    }

    void queueWrite(Lease lease) {
        pendingWrites.add(lease);
    }

    /** A lease that exits before its queued slot write was applied (it failed while scheduled) is not written. */
    void dropWrite(Lease lease) {
        pendingWrites.remove(lease);
    }

    void queueClear(Lease lease) {
        pendingClears.add(lease);
    }

    /** Clears, then writes; each cleared lease is reported finished-sending after its store is visible. */
    int applySlotOps(Consumer<Lease> finishedSending) {
        int work = pendingClears.size() + pendingWrites.size();
        for (Lease lease : pendingClears) {
            if (lease.hasSlot() && slots != null) {
                slots.clear(lease.slot());
            }
            lease.rankFinishedSending(rank);
            finishedSending.accept(lease);
        }
        pendingClears.clear();
        for (Lease lease : pendingWrites) {
            if (slots != null && lease.hasSlot()) {
                slots.write(lease.slot(), lease.nonce());
            }
        }
        pendingWrites.clear();
        return work;
    }

    void writeKv(ReferenceEngine reference, Lease lease, int[] tokens, int tp) {
        reference.write(kv.hostSegment("the reference engine's prefill"), lease.blockIds(), tokens, tp, rank);
    }

    /** Zeroes a reservation's blocks, so an engine's request never carries another request's KV. */
    void zeroBlocks(Lease lease) {
        kv.zeroBlocks(lease.blockIds(), blockBytes);
    }

    /**
     * Copies this rank's slices of an upload laid out block after block, ranks in order within a
     * block (as {@link Reservation} describes), into the lease's blocks. The caller checked the size.
     */
    void copyUpload(Lease lease, byte[] upload, int ranks) {
        int[] blocks = lease.blockIds();
        MemorySegment host = kv.hostSegment("a KV upload");
        for (int i = 0; i < blocks.length; i++) {
            MemorySegment.copy(upload, Math.toIntExact(((long) i * ranks + rank) * blockBytes), host,
                    ValueLayout.JAVA_BYTE, blocks[i] * blockBytes, Math.toIntExact(blockBytes));
        }
    }

    Reservation.RankRegion region() {
        return new Reservation.RankRegion(rank, kv.sharedFile(), kv.length());
    }

    /** What the engine's plugin opens, for a rank whose KV is a VRAM pool. */
    Optional<PoolShare> poolShare() {
        return kv.share(rank);
    }

    long blockBytes() {
        return blockBytes;
    }

    int drainNotifications(NotificationSink sink) {
        return agent.drainNotifications(sink);
    }

    long slotValue(int slot) {
        return slots == null ? 0 : slots.read(slot);
    }

    int nonZeroSlots() {
        return slots == null ? 0 : slots.nonZeroSlots();
    }

    int rank() {
        return rank;
    }

    HandshakeMetadata metadata(ProducerConfig config) {
        return new HandshakeMetadata(config.engineId(), rank, config.tpSize(), agent.name(), agent.localMetadata(),
                kv.address(), kv.length(), config.geometry(), HandshakeMetadata.LAYOUT, config.numBlocks(),
                slots == null ? 0 : slots.baseAddress(), slots == null ? 0 : slots.count(),
                HandshakeMetadata.CONNECTOR_VERSION, config.geometry().compatHash(HandshakeMetadata.CONNECTOR_VERSION),
                kv.memoryType() == MemoryType.VRAM ? HandshakeMetadata.KV_VRAM : HandshakeMetadata.KV_DRAM,
                kv.deviceId());
    }

    /**
     * Releases the regions (a VRAM pool: deregistered, then freed), then closes the agent, which refuses if
     * anything else is still held.
     */
    void close() {
        if (slots != null) {
            slots.deregister();
        }
        kv.release(agent);
        agent.close();
    }

    int openHandles() {
        return agent.openHandles();
    }
}
