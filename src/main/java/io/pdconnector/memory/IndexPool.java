package io.pdconnector.memory;

import io.pdconnector.error.InvalidInputException;
import java.util.BitSet;
import java.util.OptionalInt;

/**
 * Free indices in {@code [0, capacity)}: KV block ids (the same ids on every rank) and lease slot
 * numbers. Last freed, first reused (LIFO): a lapsed lease's blocks go to the next prompt, which is
 * what makes the lapse-and-reuse race reproducible and what a cache-warm allocator does anyway.
 * An index is taken or free, never both; freeing one that is not taken is a bug and throws.
 */
public final class IndexPool {

    private final String what;
    private final int capacity;
    private final int[] stack;
    private final BitSet taken = new BitSet();
    private int free;

    /** {@code what} names the indices in messages ("block", "slot"). */
    public IndexPool(String what, int capacity) {
        if (capacity < 0) {
            throw new IllegalArgumentException(what + " capacity must not be negative, got " + capacity);
        }
        this.what = what;
        this.capacity = capacity;
        this.stack = new int[capacity];
        for (int i = 0; i < capacity; i++) {
            stack[i] = capacity - 1 - i;
        }
        this.free = capacity;
    }

    /** All {@code n} indices or none: null when fewer are free; {@code n} outside [1, capacity] is refused. */
    public int[] allocate(int n) {
        if (n < 1 || n > capacity) {
            throw InvalidInputException.of("cannot allocate " + n + " " + what + "s from a pool of " + capacity);
        }
        if (free < n) {
            return null;
        }
        int[] ids = new int[n];
        for (int i = 0; i < n; i++) {
            ids[i] = stack[--free];
            taken.set(ids[i]);
        }
        return ids;
    }

    /** One index, if any is free. */
    public OptionalInt acquire() {
        if (free == 0) {
            return OptionalInt.empty();
        }
        int id = stack[--free];
        taken.set(id);
        return OptionalInt.of(id);
    }

    /** Frees in reverse, so the next allocation of the same size gets the same ids in the same order. */
    public void free(int[] ids) {
        for (int id : ids) {
            requireTaken(id);
        }
        for (int i = ids.length - 1; i >= 0; i--) {
            release(ids[i]);
        }
    }

    public void release(int id) {
        requireTaken(id);
        taken.clear(id);
        stack[free++] = id;
    }

    public int capacity() {
        return capacity;
    }

    public int freeCount() {
        return free;
    }

    /** Whether {@code id} is taken (allocated and not freed since). */
    public boolean isTaken(int id) {
        return id >= 0 && id < capacity && taken.get(id);
    }

    private void requireTaken(int id) {
        if (id < 0 || id >= capacity || !taken.get(id)) {
            throw new IllegalStateException(what + " " + id + " is not taken; double release?");
        }
    }
}
