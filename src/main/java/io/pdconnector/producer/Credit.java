package io.pdconnector.producer;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Blocks and lease slots granted to an engine in bulk, so that it can bind a request to them without a
 * round trip (a {@link ProducerCommand.Commit}). Owned by the step loop. Each granted slot is held by a
 * placeholder {@link Lease} whose slot already holds its nonce on every rank (L2 before any params
 * leave), so the engine may hand out params as soon as its copy into the blocks is done; the commit
 * that follows only binds and exports. What is never committed comes back when the grant closes
 * (returned, expired, shutdown): its slots are zeroed first, and only once no placeholder of the grant
 * holds a slot are its blocks freed (L3), since a decoder given params by the engine may be reading
 * them.
 */
final class Credit {

    /** A read notification that reached P for a granted nonce before the engine's commit did. */
    record EarlyRead(String requestId, int rank, String from, int consumers) {
    }

    /** How many early reads one granted nonce keeps: more than any TP mapping sends it. */
    static final int MAX_EARLY_READS = 64;

    private final String id;
    /** The engine's name for the ask that made it ({@link GrantAsks}), or null. */
    private final String askId;
    private final long expiresAtMillis;
    private final Set<Integer> blocks = new LinkedHashSet<>();
    /** Unbound placeholders by slot. */
    private final Map<Integer, Lease> placeholders = new LinkedHashMap<>();
    private final Map<Long, List<EarlyRead>> earlyReads = new LinkedHashMap<>();
    private boolean closing;

    Credit(String id, String askId, long expiresAtMillis) {
        this.id = id;
        this.askId = askId;
        this.expiresAtMillis = expiresAtMillis;
    }

    void addBlocks(int[] ids) {
        for (int b : ids) {
            blocks.add(b);
        }
    }

    /** The request id a placeholder holds: ':' never appears in a request id, so it cannot collide. */
    static String placeholderId(String creditId, int slot) {
        return "~credit:" + creditId + ":" + slot;
    }

    void addPlaceholder(Lease lease) {
        placeholders.put(lease.slot(), lease);
    }

    String id() {
        return id;
    }

    String askId() {
        return askId;
    }

    long expiresAtMillis() {
        return expiresAtMillis;
    }

    boolean closing() {
        return closing;
    }

    /** From now on nothing of it can be committed; the reclaim phase takes it back. */
    void close() {
        closing = true;
    }

    int[] blockIds() {
        return blocks.stream().mapToInt(Integer::intValue).toArray();
    }

    List<Lease> placeholders() {
        return new ArrayList<>(placeholders.values());
    }

    /** How many granted slots no request is bound to yet; no copy, so the step's gauges may ask every step. */
    int placeholderCount() {
        return placeholders.size();
    }

    Lease placeholder(int slot) {
        return placeholders.get(slot);
    }

    boolean holdsBlocks(int[] ids) {
        Set<Integer> seen = new LinkedHashSet<>();
        for (int b : ids) {
            if (!blocks.contains(b) || !seen.add(b)) {
                return false;
            }
        }
        return true;
    }

    /** The blocks and the slot go to a committed request: the grant no longer owns them. */
    List<EarlyRead> bind(int[] ids, int slot, long nonce) {
        for (int b : ids) {
            blocks.remove(b);
        }
        placeholders.remove(slot);
        List<EarlyRead> early = earlyReads.remove(nonce);
        return early == null ? List.of() : early;
    }

    void forgetPlaceholder(Lease lease) {
        placeholders.remove(lease.slot(), lease);
        earlyReads.remove(lease.nonce());
    }

    /** Keeps a read of a granted, unbound nonce; false when the nonce is not this grant's or its list is full. */
    boolean stash(long nonce, EarlyRead read) {
        boolean granted = placeholders.values().stream().anyMatch(l -> l.nonce() == nonce);
        if (!granted) {
            return false;
        }
        List<EarlyRead> reads = earlyReads.computeIfAbsent(nonce, n -> new ArrayList<>());
        if (reads.size() >= MAX_EARLY_READS) {
            return false;
        }
        reads.add(read);
        return true;
    }

    /** Whether every placeholder has left the table (freed, or bound to a request). */
    boolean noSlotHeld() {
        return placeholders.isEmpty();
    }

    int blockCount() {
        return blocks.size();
    }

    void dropBlocks() {
        blocks.clear();
    }
}
