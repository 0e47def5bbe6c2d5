package io.pdconnector.producer;

import io.pdconnector.config.ProducerConfig;
import io.pdconnector.memory.SlotArray;
import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.reference.ReferenceEngine;
import io.pdconnector.transfer.NotificationSink;
import io.pdconnector.transfer.RegisteredRegion;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferEngine;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * One prefill rank: its agent, its KV region and its lease slots. Slot operations are batched per
 * step and applied clears first, then writes (L2); a rank reports finished-sending only for a
 * lease whose slot it has zeroed (L3). The KV region is a shared file when the config names a
 * directory for it, so a local engine can write a request's blocks in place.
 */
final class ProducerRank {

    private final int rank;
    private final TransferAgent agent;
    private final RegisteredRegion kv;
    private final long blockBytes;
    private final SlotArray slots;
    private final List<Lease> pendingClears = new ArrayList<>();
    private final List<Lease> pendingWrites = new ArrayList<>();

    private ProducerRank(int rank, TransferAgent agent, RegisteredRegion kv, long blockBytes, SlotArray slots) {
        this.rank = rank;
        this.agent = agent;
        this.kv = kv;
        this.blockBytes = blockBytes;
        this.slots = slots;
    }

    /** Creates the agent and registers memory; on failure releases what it took and says why. */
    static ProducerRank open(TransferEngine engine, ProducerConfig config, int rank) {
        TransferAgent agent = engine.createAgent(config.engineId() + "-p" + rank);
        RegisteredRegion kv = null;
        try {
            long blockBytes = config.geometry().blockBytes(config.tpSize());
            long bytes = config.numBlocks() * blockBytes;
            kv = config.kvFile(rank).isPresent() ? agent.allocateShared("kv", config.kvFile(rank).get(), bytes)
                    : agent.allocate("kv", bytes);
            SlotArray slots = config.leaseVerification() ? registerSlots(agent, config, rank) : null;
            return new ProducerRank(rank, agent, kv, blockBytes, slots);
        } catch (RuntimeException e) {
            if (kv != null) {
                agent.deregister(kv);
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
        reference.write(kv.segment(), lease.blockIds(), tokens, tp, rank);
    }

    /** Zeroes a reservation's blocks, so an engine's request never carries another request's KV. */
    void zeroBlocks(Lease lease) {
        for (int block : lease.blockIds()) {
            kv.segment().asSlice(block * blockBytes, blockBytes).fill((byte) 0);
        }
    }

    /**
     * Copies this rank's slices of an upload laid out block after block, ranks in order within a
     * block (as {@link Reservation} describes), into the lease's blocks. The caller checked the size.
     */
    void copyUpload(Lease lease, byte[] upload, int ranks) {
        int[] blocks = lease.blockIds();
        for (int i = 0; i < blocks.length; i++) {
            MemorySegment.copy(upload, Math.toIntExact(((long) i * ranks + rank) * blockBytes), kv.segment(),
                    ValueLayout.JAVA_BYTE, blocks[i] * blockBytes, Math.toIntExact(blockBytes));
        }
    }

    Reservation.RankRegion region() {
        return new Reservation.RankRegion(rank, kv.sharedFile(), kv.length());
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
                HandshakeMetadata.CONNECTOR_VERSION, config.geometry().compatHash(HandshakeMetadata.CONNECTOR_VERSION));
    }

    /** Releases the regions, then closes the agent, which refuses if anything else is still held. */
    void close() {
        if (slots != null) {
            slots.deregister();
        }
        agent.deregister(kv);
        agent.close();
    }

    int openHandles() {
        return agent.openHandles();
    }
}
