package io.pdconnector.transfer;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;

/**
 * A rank's KV region: host memory registered with its agent (today's, {@code pd.kv.memory=dram}), or a
 * {@link DevicePool} on its GPU ({@code vram}). Exactly one of them, chosen once at {@link #open}; under
 * {@code vram} there is no fallback to host memory. Whoever opened it releases it with {@link #release},
 * before closing the agent.
 */
public sealed interface RankKv permits RankKv.Host, RankKv.Device {

    long address();

    long length();

    /** DRAM for host memory, VRAM for a pool: the memory type of the rank's descriptor lists. */
    MemoryType memoryType();

    /** NIXL's devId of the rank's descriptors: 0 for host memory, the pool's CUDA ordinal here. */
    int deviceId();

    /** The file a local engine maps, for a host region made from a file; never for a device pool. */
    Optional<Path> sharedFile();

    /** What the plugin needs to open a device pool; empty for host memory. */
    Optional<PoolShare> share(int rank);

    /**
     * The host bytes, for the Java paths that read or write KV themselves (the reference engine, uploads,
     * read-outs); a device pool refuses, naming {@code use}: Java cannot reach GPU memory.
     */
    MemorySegment hostSegment(String use);

    /** Zeroes the blocks {@code blockIds} of {@code blockBytes} each, in host memory or on the GPU. */
    void zeroBlocks(int[] blockIds, long blockBytes);

    /** Host: deregisters (and so unmaps) the region. Device: deregisters from NIXL, frees, gives the GPU back. */
    void release(TransferAgent agent);

    /**
     * Makes the rank's region: with {@code pools} present, a pool on the rank's GPU registered with
     * {@code agent} as VRAM (the agent must be able to: loopback and fault injection cannot, and are refused);
     * otherwise host memory, a file's when {@code file} names one, as before.
     */
    static RankKv open(TransferAgent agent, int rank, Optional<Path> file, long bytes, Optional<KvPools> pools) {
        Objects.requireNonNull(agent, "agent");
        if (pools.isEmpty()) {
            return new Host(file.isPresent() ? agent.allocateShared("kv", file.get(), bytes)
                    : agent.allocate("kv", bytes));
        }
        if (!(agent instanceof DeviceMemory device)) {
            throw new IllegalStateException("pd.kv.memory=vram: rank " + rank + "'s transfer agent ("
                    + agent.getClass().getSimpleName() + ") cannot register GPU memory; pd.kv.memory=vram needs "
                    + "pd.transfer.engine=nixl without fault injection");
        }
        return new Device(pools.get().open(device, rank, agent.name() + "-kv", bytes));
    }

    /** Today's region: host memory the agent allocated and registered. */
    record Host(RegisteredRegion region) implements RankKv {

        public Host {
            Objects.requireNonNull(region, "region");
        }

        @Override
        public long address() {
            return region.address();
        }

        @Override
        public long length() {
            return region.length();
        }

        @Override
        public MemoryType memoryType() {
            return MemoryType.DRAM;
        }

        @Override
        public int deviceId() {
            return 0;
        }

        @Override
        public Optional<Path> sharedFile() {
            return region.sharedFile();
        }

        @Override
        public Optional<PoolShare> share(int rank) {
            return Optional.empty();
        }

        @Override
        public MemorySegment hostSegment(String use) {
            return region.segment();
        }

        @Override
        public void zeroBlocks(int[] blockIds, long blockBytes) {
            for (int block : blockIds) {
                region.segment().asSlice(block * blockBytes, blockBytes).fill((byte) 0);
            }
        }

        @Override
        public void release(TransferAgent agent) {
            agent.deregister(region);
        }
    }

    /** The rank's pool on its GPU; the rank owns it and is the only one to close it. */
    record Device(DevicePool pool) implements RankKv {

        public Device {
            Objects.requireNonNull(pool, "pool");
        }

        @Override
        public long address() {
            return pool.address();
        }

        @Override
        public long length() {
            return pool.bytes();
        }

        @Override
        public MemoryType memoryType() {
            return MemoryType.VRAM;
        }

        @Override
        public int deviceId() {
            return pool.deviceOrdinal();
        }

        @Override
        public Optional<Path> sharedFile() {
            return Optional.empty();
        }

        @Override
        public Optional<PoolShare> share(int rank) {
            return Optional.of(pool.share(rank));
        }

        @Override
        public MemorySegment hostSegment(String use) {
            throw new KvInDeviceMemoryException(use);
        }

        @Override
        public void zeroBlocks(int[] blockIds, long blockBytes) {
            long[] offsets = new long[blockIds.length];
            for (int i = 0; i < blockIds.length; i++) {
                offsets[i] = blockIds[i] * blockBytes;
            }
            pool.zero(offsets, blockBytes);
        }

        @Override
        public void release(TransferAgent agent) {
            pool.close();
        }
    }
}
