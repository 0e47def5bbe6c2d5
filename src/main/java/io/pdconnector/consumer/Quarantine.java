package io.pdconnector.consumer;

import io.pdconnector.memory.IndexPool;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.jboss.logging.Logger;

/**
 * L13: what a pull leaves behind when it ends (timeout, abort, its producer gone, a bug) while one of
 * its block READs is still in flight. NIXL may report a cancel done while the bytes still land, or
 * refuse it (REPOST_ACTIVE), so such a READ is not cancelled: it stays held here with the pull's D
 * blocks and is polled every step until NIXL reports it terminal (done, failed, or not found once D
 * dropped the producer's agent). Then its handle is released and the blocks are freed; not before,
 * so no later pull can be given a block the READ may still write. The one owner of what it holds,
 * and its one release path (shutdown aside, {@link #cancelAll}).
 */
final class Quarantine {

    private static final Logger LOG = Logger.getLogger(Quarantine.class);

    /** The READs a pull left held and, if one of them was still in flight, its blocks. */
    private static final class Held {
        final String pullId;
        final List<BlockRead> reads;
        final int[] blocks;
        boolean pollFailureLogged;

        Held(String pullId, List<BlockRead> reads, int[] blocks) {
            this.pullId = pullId;
            this.reads = reads;
            this.blocks = blocks;
        }
    }

    private final IndexPool pool;
    private final ConsumerCounters counters;
    private final List<Held> held = new ArrayList<>();

    Quarantine(IndexPool pool, ConsumerCounters counters) {
        this.pool = pool;
        this.counters = counters;
    }

    /**
     * Takes over from an ending pull every READ whose handle is still held and, if one of them is not
     * terminal, the pull's blocks: from here on the pull owns neither.
     */
    void takeOver(Pull pull) {
        List<BlockRead> reads = pull.takeHeldReads();
        if (reads.isEmpty()) {
            return;
        }
        long inFlight = reads.stream().filter(r -> !r.terminal()).count();
        int[] blocks = inFlight > 0 ? pull.surrenderBlocks() : null;
        held.add(new Held(pull.requestId(), reads, blocks));
        counters.readsQuarantined.addAndGet(inFlight);
        if (blocks != null) {
            counters.blocksQuarantined.addAndGet(blocks.length);
        }
    }

    /** Polls every held READ; frees the blocks of an entry once each of its READs is terminal and released. */
    int poll() {
        int n = 0;
        for (Iterator<Held> it = held.iterator(); it.hasNext();) {
            Held h = it.next();
            if (settled(h)) {
                if (h.blocks != null) {
                    pool.free(h.blocks);
                }
                it.remove();
                n++;
            }
        }
        return n;
    }

    /** A poll that throws (a bug, not a transfer error) leaves the READ held: its blocks wait, the loop goes on. */
    private static boolean settled(Held h) {
        boolean all = true;
        for (BlockRead r : h.reads) {
            try {
                all &= r.poll() && !r.held();
            } catch (RuntimeException e) {
                if (!h.pollFailureLogged) {
                    h.pollFailureLogged = true;
                    LOG.errorf(e, "a quarantined READ of pull %s failed to poll; its blocks stay held", h.pullId);
                }
                all = false;
            }
        }
        return all;
    }

    /** D blocks held here. */
    int blocks() {
        int n = 0; // a loop, not a stream: the gauges read this every step
        for (Held h : held) {
            n += h.blocks == null ? 0 : h.blocks.length;
        }
        return n;
    }

    /** READ handles held here. */
    int reads() {
        return (int) held.stream().flatMap(h -> h.reads.stream()).filter(BlockRead::held).count();
    }

    /**
     * Shutdown: cancels every READ still held (the memory they write goes with the loop). A READ the
     * engine will not let go is logged and stays held, so its agent refuses to close and says so.
     */
    void cancelAll() {
        for (Held h : held) {
            for (BlockRead r : h.reads) {
                if (!r.cancel()) {
                    LOG.errorf("a quarantined READ of pull %s could not be cancelled at shutdown", h.pullId);
                }
            }
        }
        held.clear();
    }
}
