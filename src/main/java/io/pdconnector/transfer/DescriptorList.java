package io.pdconnector.transfer;

import java.util.Arrays;

/**
 * (address, length) pairs kept flat, the layout the native helper takes in one downcall, all of one memory
 * type: host memory, or GPU memory on one device (NIXL's devId, the CUDA ordinal in the memory owner's process).
 */
public final class DescriptorList {

    private final MemoryType memoryType;
    private final int deviceId;
    private long[] pairs;
    private int count;
    private boolean leaseSlots;

    /** A list of host memory. */
    public DescriptorList(int expected) {
        this(expected, MemoryType.DRAM, 0);
    }

    /** A list of {@code memoryType}: device 0 for DRAM; for VRAM the CUDA ordinal of the memory's GPU. */
    public DescriptorList(int expected, MemoryType memoryType, int deviceId) {
        java.util.Objects.requireNonNull(memoryType, "memoryType");
        if (memoryType == MemoryType.DRAM ? deviceId != 0 : deviceId < 0) {
            throw new IllegalArgumentException(memoryType + " descriptors cannot be on device " + deviceId
                    + " (DRAM is device 0, VRAM a CUDA ordinal >= 0)");
        }
        this.memoryType = memoryType;
        this.deviceId = deviceId;
        pairs = new long[Math.max(2, 2 * expected)];
    }

    public MemoryType memoryType() {
        return memoryType;
    }

    /** NIXL's devId of every descriptor: 0 for DRAM, the CUDA ordinal for VRAM. */
    public int deviceId() {
        return deviceId;
    }

    public DescriptorList add(long address, long length) {
        if (address == 0 || length <= 0) {
            throw new IllegalArgumentException(
                    "descriptor needs a non-zero address and a positive length, got " + address + "/" + length);
        }
        if (2 * count + 2 > pairs.length) {
            pairs = Arrays.copyOf(pairs, pairs.length * 2);
        }
        pairs[2 * count] = address;
        pairs[2 * count + 1] = length;
        count++;
        return this;
    }

    /** Descriptors of {@code count} consecutive slices of {@code size} bytes from {@code base}. */
    public static DescriptorList contiguous(long base, long size, int count) {
        DescriptorList list = new DescriptorList(count);
        for (int i = 0; i < count; i++) {
            list.add(base + i * size, size);
        }
        return list;
    }

    /**
     * One 8-byte descriptor per lease slot of a peer from {@code base}: a list that says what it
     * describes, so a transfer-engine decorator can tell slot READs from block READs.
     */
    public static DescriptorList leaseSlots(long base, int count) {
        DescriptorList list = contiguous(base, Long.BYTES, count);
        list.leaseSlots = true;
        return list;
    }

    /** Whether this list describes a peer's lease slots ({@link #leaseSlots}), not KV blocks. */
    public boolean describesLeaseSlots() {
        return leaseSlots;
    }

    public int count() {
        return count;
    }

    public long address(int i) {
        return pairs[2 * checkIndex(i)];
    }

    public long length(int i) {
        return pairs[2 * checkIndex(i) + 1];
    }

    /** A copy of the flat pairs, exactly {@code 2 * count()} long. */
    public long[] flatPairs() {
        return Arrays.copyOf(pairs, 2 * count);
    }

    private int checkIndex(int i) {
        return java.util.Objects.checkIndex(i, count);
    }
}
