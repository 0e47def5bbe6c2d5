package io.pdconnector.lease;

import java.util.ArrayDeque;
import java.util.BitSet;
import java.util.OptionalInt;

/**
 * Free lease slot indices. The lease table gives a slot back only after every rank reported the
 * request finished-sending (L4), so a slot is never handed out while a rank may still hold its nonce.
 */
public final class SlotPool {

    private final int capacity;
    private final ArrayDeque<Integer> free = new ArrayDeque<>();
    private final BitSet taken = new BitSet();

    public SlotPool(int capacity) {
        if (capacity < 0) {
            throw new IllegalArgumentException("slot capacity must not be negative, got " + capacity);
        }
        this.capacity = capacity;
        for (int i = capacity - 1; i >= 0; i--) {
            free.push(i);
        }
    }

    public OptionalInt acquire() {
        Integer slot = free.poll();
        if (slot == null) {
            return OptionalInt.empty();
        }
        taken.set(slot);
        return OptionalInt.of(slot);
    }

    public void release(int slot) {
        if (slot < 0 || slot >= capacity || !taken.get(slot)) {
            throw new IllegalStateException("slot " + slot + " is not taken; double release?");
        }
        taken.clear(slot);
        free.push(slot);
    }

    public int capacity() {
        return capacity;
    }

    public int free() {
        return free.size();
    }
}
