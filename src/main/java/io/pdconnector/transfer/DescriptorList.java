package io.pdconnector.transfer;

import java.util.Arrays;

/** (address, length) pairs kept flat, the layout the native helper takes in one downcall. */
public final class DescriptorList {

    private long[] pairs;
    private int count;
    private boolean leaseSlots;

    public DescriptorList(int expected) {
        pairs = new long[Math.max(2, 2 * expected)];
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
