package io.pdconnector.consumer;

import io.pdconnector.memory.IndexPool;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * The blocks of released pulls whose {@link PulledKv} a caller's thread was still reading when the
 * loop let them go: the one owner of such blocks, freed by {@link #poll} in the first step after the
 * last reader unpinned (readers pin for one CRC-32C or reference check, so that is within a step or two).
 */
final class PinnedBlocks {

    private record Held(PulledKv kv, int[] blocks) {
    }

    private final IndexPool pool;
    private final List<Held> held = new ArrayList<>();

    PinnedBlocks(IndexPool pool) {
        this.pool = pool;
    }

    /** Frees {@code blocks} now if no reader holds {@code kv} (null: never exposed), else once none does. */
    void free(PulledKv kv, int[] blocks) {
        if (kv == null || kv.retire()) {
            pool.free(blocks);
        } else {
            held.add(new Held(kv, blocks));
        }
    }

    int poll() {
        int n = 0;
        for (Iterator<Held> it = held.iterator(); it.hasNext();) {
            Held h = it.next();
            if (h.kv().retire()) {
                pool.free(h.blocks());
                it.remove();
                n++;
            }
        }
        return n;
    }

    /** D blocks waiting here for a reader. */
    int blocks() {
        int n = 0;
        for (Held h : held) {
            n += h.blocks().length;
        }
        return n;
    }
}
