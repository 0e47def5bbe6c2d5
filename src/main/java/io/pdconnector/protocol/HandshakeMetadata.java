package io.pdconnector.protocol;

import io.pdconnector.error.IncompatiblePeerException;
import io.pdconnector.kv.ModelGeometry;
import java.util.Objects;

/**
 * What one rank of an instance publishes so a peer can READ from it. {@code slotBase} and
 * {@code slotCount} are 0 when the instance runs without lease verification. {@code kvMemory} says
 * where the KV region is: {@code dram}, or {@code vram} on CUDA device {@code kvDevice} of the peer's
 * process (the devId its pool is registered with, which a reader's descriptors must carry); a record
 * without them (an instance from before they existed) is host memory.
 */
public record HandshakeMetadata(
        String engineId,
        int rank,
        int tpSize,
        String agentName,
        byte[] agentMetadata,
        long kvBase,
        long kvLength,
        ModelGeometry geometry,
        String layout,
        int numBlocks,
        long slotBase,
        int slotCount,
        int connectorVersion,
        String compatHash,
        String kvMemory,
        int kvDevice) {

    public static final String KV_DRAM = "dram";
    public static final String KV_VRAM = "vram";

    public static final String LAYOUT = "HND";
    /** The connector version both sides must share; in every handshake and in the compatibility hash. */
    public static final int CONNECTOR_VERSION = 16;
    public static final int MAX_BLOCKS = 1 << 24;
    public static final int MAX_SLOTS = 1 << 24;

    /** A rank whose KV is in host memory. */
    public HandshakeMetadata(String engineId, int rank, int tpSize, String agentName, byte[] agentMetadata,
            long kvBase, long kvLength, ModelGeometry geometry, String layout, int numBlocks, long slotBase,
            int slotCount, int connectorVersion, String compatHash) {
        this(engineId, rank, tpSize, agentName, agentMetadata, kvBase, kvLength, geometry, layout, numBlocks,
                slotBase, slotCount, connectorVersion, compatHash, KV_DRAM, 0);
    }

    public HandshakeMetadata {
        kvMemory = kvMemory == null ? KV_DRAM : kvMemory;
        Objects.requireNonNull(engineId, "engineId");
        Objects.requireNonNull(agentName, "agentName");
        Objects.requireNonNull(geometry, "geometry");
        agentMetadata = agentMetadata.clone();
    }

    @Override
    public byte[] agentMetadata() {
        return agentMetadata.clone();
    }

    public long blockBytes() {
        return geometry.blockBytes(tpSize);
    }

    /** Whether the rank's KV is in GPU memory (its descriptors are VRAM ones on {@link #kvDevice}). */
    public boolean kvInVram() {
        return KV_VRAM.equals(kvMemory);
    }

    public boolean hasSlots() {
        return slotCount > 0;
    }

    /** Refuses a peer of another connector version or model geometry, saying which differs. */
    public void requireCompatible(ModelGeometry localGeometry, int localVersion) {
        String where = where();
        if (connectorVersion != localVersion) {
            throw new IncompatiblePeerException(where + " runs connector version " + connectorVersion
                    + ", this instance runs " + localVersion + "; upgrade one of them");
        }
        String expected = localGeometry.compatHash(localVersion);
        if (!expected.equals(compatHash)) {
            throw new IncompatiblePeerException(where + " has compatibility hash " + compatHash + " (geometry "
                    + geometry + "), this instance has " + expected + " (geometry " + localGeometry
                    + "); both must serve the same model layout");
        }
        if (!LAYOUT.equals(layout)) {
            throw new IncompatiblePeerException(where + " uses KV layout " + layout + ", only " + LAYOUT
                    + " is supported");
        }
        requireSaneMemory(where);
    }

    /**
     * Refuses a peer declaring more than this instance accepts: D prepares one descriptor per block
     * (and run) and one per lease slot on its loop, so the counts are bounded before anything of the
     * peer is loaded. {@code maxBlocks} is {@code pd.consumer.max-peer-blocks}, {@code maxDescriptors}
     * {@code pd.consumer.max-peer-descriptors}.
     */
    public void requireWithin(int maxBlocks, int maxDescriptors) {
        if (numBlocks > maxBlocks) {
            throw new IncompatiblePeerException(where() + " publishes " + numBlocks + " KV blocks, more than the "
                    + maxBlocks + " this instance accepts from a peer (pd.consumer.max-peer-blocks)");
        }
        if (slotCount > maxDescriptors) {
            throw new IncompatiblePeerException(where() + " publishes " + slotCount + " lease slots, more than the "
                    + maxDescriptors + " descriptors one list may hold here (pd.consumer.max-peer-descriptors)");
        }
    }

    /**
     * The length of a descriptor list over every block of this rank with {@code runsPerBlock} runs each,
     * computed without overflow; refused (422) above {@code maxDescriptors}.
     */
    public int descriptorCount(int runsPerBlock, int maxDescriptors) {
        long count = Math.multiplyExact((long) numBlocks, (long) runsPerBlock);
        if (runsPerBlock < 1 || count > maxDescriptors) {
            throw new IncompatiblePeerException(where() + " publishes " + numBlocks + " KV blocks of " + runsPerBlock
                    + " runs each for this instance's ranks: " + count + " descriptors, more than the "
                    + maxDescriptors + " one list may hold here (pd.consumer.max-peer-descriptors)");
        }
        return (int) count;
    }

    private String where() {
        return "peer " + engineId + " rank " + rank;
    }

    /** D sizes descriptor lists and addresses from these numbers, so they must describe memory that can exist. */
    private void requireSaneMemory(String where) {
        if (tpSize < 1 || geometry.kvHeads() % tpSize != 0 || rank < 0 || rank >= tpSize) {
            throw new IncompatiblePeerException(where + " of tp_size " + tpSize + " cannot split the model's "
                    + geometry.kvHeads() + " KV heads");
        }
        if (numBlocks < 1 || numBlocks > MAX_BLOCKS || kvBase <= 0 || !fits(kvBase, kvLength)
                || kvLength < saturatedProduct(numBlocks, blockBytes())) {
            throw new IncompatiblePeerException(where + " publishes " + numBlocks + " blocks of " + blockBytes()
                    + " bytes in a KV region of " + kvLength + " bytes at " + kvBase);
        }
        if (!(KV_DRAM.equals(kvMemory) && kvDevice == 0 || KV_VRAM.equals(kvMemory) && kvDevice >= 0)) {
            throw new IncompatiblePeerException(where + " publishes its KV in " + kvMemory + " memory on device "
                    + kvDevice + "; only dram (device 0) or vram (a CUDA device >= 0) exist");
        }
        if (slotCount < 0 || slotCount > MAX_SLOTS || slotCount > 0 && (slotBase <= 0
                || !fits(slotBase, (long) slotCount * Long.BYTES))) {
            throw new IncompatiblePeerException(where + " publishes " + slotCount + " lease slots at " + slotBase);
        }
    }

    /** Whether {@code [base, base + length)} lies in the positive address space. */
    private static boolean fits(long base, long length) {
        return length >= 0 && base <= Long.MAX_VALUE - length;
    }

    private static long saturatedProduct(long a, long b) {
        try {
            return Math.multiplyExact(a, b);
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }
}
