package io.pdconnector.producer;

import java.util.ArrayDeque;
import java.util.BitSet;

/**
 * Free KV block ids, the same ids on every rank. Last freed, first reused (LIFO): a lapsed lease's
 * blocks go to the next prompt, which is what makes the lapse-and-reuse race reproducible and is
 * what a cache-warm allocator does anyway.
 */
public final class BlockPool {

    private final int capacity;
    private final ArrayDeque<Integer> free = new ArrayDeque<>();
    private final BitSet taken = new BitSet();

    public BlockPool(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("a block pool needs at least one block, got " + capacity);
        }
        this.capacity = capacity;
        for (int b = capacity - 1; b >= 0; b--) {
            free.push(b);
        }
    }

    /** All {@code n} blocks or none: null when fewer are free. */
    public int[] allocate(int n) {
        if (n < 1 || n > capacity) {
            throw new IllegalArgumentException("cannot allocate " + n + " blocks from a pool of " + capacity);
        }
        if (free.size() < n) {
            return null;
        }
        int[] blocks = new int[n];
        for (int i = 0; i < n; i++) {
            blocks[i] = free.pop();
            taken.set(blocks[i]);
        }
        return blocks;
    }

    /** Frees in reverse so the next allocation of the same size gets the same ids in the same order. */
    public void free(int[] blocks) {
        for (int b : blocks) {
            if (b < 0 || b >= capacity || !taken.get(b)) {
                throw new IllegalStateException("block " + b + " is not allocated; double free?");
            }
        }
        for (int i = blocks.length - 1; i >= 0; i--) {
            taken.clear(blocks[i]);
            free.push(blocks[i]);
        }
    }

    public int capacity() {
        return capacity;
    }

    public int freeCount() {
        return free.size();
    }
}
