package io.pdconnector.producer;

import io.pdconnector.error.InvalidInputException;
import io.pdconnector.error.StateConflictException;
import io.pdconnector.error.UnavailableException;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.protocol.LeaseNotification;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import org.jboss.logging.Logger;

/**
 * The producer's grants ({@link Credit}): granted in two phases of one step (slots queued before
 * {@link SlotOps}, answered after it, so the answer leaves only once every rank's slot holds its nonce:
 * L2), committed by the engine (bind and export in one command), and taken back when returned, expired
 * or at shutdown (slots zeroed through {@link LeaseExit}, then, once none is held, blocks freed: L3).
 */
final class Credits {

    private static final Logger LOG = Logger.getLogger(Credits.class);

    private final ProducerState state;
    private final Exporter exporter;
    private final LeaseExit exit;
    private final Map<String, Credit> byId = new LinkedHashMap<>();
    private final List<ProducerCommand.Grant> pending = new ArrayList<>();
    private final Map<Credit, Granting> granting = new LinkedHashMap<>();
    private final List<ProducerCommand.ReturnCredit> returning = new ArrayList<>();
    private final GrantAsks asks = new GrantAsks();
    private ReadReplay replay = (lease, read) -> { };
    private long granted;

    /** What one grant command added to its grant this step, answered after {@link SlotOps}. */
    private record Granting(ProducerCommand.Grant command, int[] blocks, List<Lease> placeholders) {
    }

    /** Applies an early read to the lease it was meant for, as if it arrived now ({@link NotificationInbox}). */
    interface ReadReplay {
        void apply(Lease lease, Credit.EarlyRead read);
    }

    Credits(ProducerState state, Exporter exporter, LeaseExit exit) {
        this.state = state;
        this.exporter = exporter;
        this.exit = exit;
    }

    void replayReadsWith(ReadReplay replay) {
        this.replay = replay;
    }

    void request(ProducerCommand.Grant grant) {
        pending.add(grant);
    }

    /**
     * Before {@link SlotOps}: as many of the asked blocks and slots as are free (none is an answer too),
     * into a new grant or the open grant being extended; an extension of a grant that is not open is refused.
     */
    int schedule(long now) {
        int n = 0;
        for (ProducerCommand.Grant g : pending) {
            Credit credit = g.extend() == null ? null : byId.get(g.extend());
            if (g.extend() != null && (credit == null || credit.closing() || now >= credit.expiresAtMillis()
                    || granting.containsKey(credit))) {
                g.reply().completeExceptionally(new StateConflictException(null, "grant " + g.extend() + " is not"
                        + " open (unknown, returned, expired or being extended): ask for a new grant"));
                continue;
            }
            StateConflictException askRefused = credit == null ? asks.refusal(g.askId(), madeBy(g.askId())) : null;
            if (askRefused != null) {
                g.reply().completeExceptionally(askRefused);
                continue;
            }
            if (credit == null && (g.blocks() == 0 || state.blocks.freeCount() == 0)) {
                g.reply().completeExceptionally(UnavailableException.noFreeBlocks("a grant needs at least one block; "
                        + state.blocks.freeCount() + " of " + state.blocks.capacity() + " are free"));
                continue;
            }
            if (credit == null) {
                String id = "g" + state.nonces.epoch() + "-" + (++granted);
                credit = new Credit(id, g.askId(), now + state.config.reservationTimeout().toMillis());
                byId.put(id, credit);
            }
            int blocks = Math.min(g.blocks(), state.blocks.freeCount());
            int[] ids = blocks == 0 ? new int[0] : state.blocks.allocate(blocks);
            credit.addBlocks(ids);
            int leases = state.config.leaseVerification() ? Math.min(g.leases(), state.slots.freeCount()) : 0;
            List<Lease> added = new ArrayList<>();
            for (int i = 0; i < leases; i++) {
                OptionalInt slot = state.slots.acquire();
                Lease placeholder = state.leases.reserve(Credit.placeholderId(credit.id(), slot.getAsInt()),
                        new int[0], 0, slot.getAsInt(), state.nonces.next());
                state.ranks.forEach(r -> r.queueWrite(placeholder));
                credit.addPlaceholder(placeholder);
                added.add(placeholder);
            }
            granting.put(credit, new Granting(g, ids, added));
            n++;
        }
        pending.clear();
        return n;
    }

    /**
     * After {@link SlotOps}: every granted slot holds its nonce on every rank, so the grant may leave; every
     * returned grant's unbound slots are zero, so its return is answered.
     */
    int answer(long now) {
        int n = 0;
        for (Map.Entry<Credit, Granting> e : granting.entrySet()) {
            Credit credit = e.getKey();
            Granting g = e.getValue();
            try {
                for (Lease placeholder : g.placeholders()) {
                    exporter.requireSlotWrittenOnEveryRank(placeholder);
                    placeholder.moveTo(LeaseState.SLOT_WRITTEN);
                    placeholder.startWriting(Long.MAX_VALUE); // the grant's deadline governs it, not the reaper
                }
                g.command().reply().complete(CreditGrant.of(state, credit, g.blocks(), g.placeholders(), now));
                state.counters.creditsGranted.incrementAndGet();
            } catch (RuntimeException bug) {
                LOG.errorf(bug, "grant %s failed in the step; it is taken back", credit.id());
                credit.close();
                g.command().reply().completeExceptionally(bug);
            }
            n++;
        }
        granting.clear();
        returning.forEach(r -> r.reply().complete(true));
        n += returning.size();
        returning.clear();
        return n;
    }

    /**
     * Binds a request to granted blocks and a granted slot and exports its lease. Refused (and nothing
     * changed) unless the grant is open, the blocks are the grant's and as many as the tokens need, and
     * the slot is the grant's with that nonce. Reads that reached P before the commit count now.
     */
    KvTransferParams commit(Commit c, long now) {
        Credit credit = open(c.creditId(), c.requestId(), now);
        if (state.leases.contains(c.requestId())) {
            throw new StateConflictException(c.requestId(), "request " + c.requestId()
                    + " still holds a lease; an id can be reused only after its lease is freed");
        }
        int needed = state.config.geometry().blocksFor(c.numTokens());
        if (c.blockIds().length != needed || !credit.holdsBlocks(c.blockIds())) {
            throw InvalidInputException.of("request " + c.requestId() + ": " + c.numTokens() + " tokens take "
                    + needed + " distinct blocks of grant " + c.creditId() + ", got " + c.blockIds().length
                    + (credit.holdsBlocks(c.blockIds()) ? "" : " not all of them granted by it"));
        }
        Lease placeholder = null;
        if (state.config.leaseVerification()) {
            placeholder = c.slot() == Lease.NO_SLOT ? null : credit.placeholder(c.slot());
            if (placeholder == null || placeholder.nonce() != c.nonce() || placeholder.state() != LeaseState.WRITING) {
                throw InvalidInputException.of("request " + c.requestId() + ": slot " + c.slot() + " with that nonce"
                        + " is not an unbound lease of grant " + c.creditId());
            }
        } else if (c.slot() != Lease.NO_SLOT) {
            throw InvalidInputException.of("this instance runs without lease verification: a commit names no slot");
        }
        List<Credit.EarlyRead> early = credit.bind(c.blockIds(), c.slot(), c.nonce());
        if (placeholder != null) {
            placeholder.moveTo(LeaseState.BOUND);
            state.leases.remove(placeholder);
        }
        Lease lease = state.leases.reserve(c.requestId(), c.blockIds(), c.numTokens(),
                placeholder == null ? Lease.NO_SLOT : c.slot(),
                placeholder == null ? LeaseNotification.NO_NONCE : c.nonce());
        if (lease.hasSlot()) {
            exporter.requireSlotWrittenOnEveryRank(lease);
            lease.moveTo(LeaseState.SLOT_WRITTEN);
        }
        lease.startWriting(now + state.config.reservationTimeout().toMillis());
        KvTransferParams params = exporter.export(lease, now);
        state.counters.creditCommits.incrementAndGet();
        for (Credit.EarlyRead read : early) {
            if (read.requestId().equals(c.requestId())) {
                replay.apply(lease, read);
            }
        }
        return params;
    }

    /**
     * The engine gives back what it did not commit (also when its copy failed after it may have handed out
     * params): every unbound slot's clear is queued now, and the answer waits for {@link #answer}, after
     * this step's {@link SlotOps} zeroed them, so a decoder given those params declines from then on. A
     * grant P does not hold (any more) is answered false at once.
     */
    void giveBack(ProducerCommand.ReturnCredit r) {
        Credit credit = byId.get(r.creditId());
        if (credit == null) {
            r.reply().complete(false);
            return;
        }
        credit.close();
        credit.placeholders().stream().filter(Lease::anyRankHeld).forEach(exit::allRanks);
        returning.add(r);
    }

    /**
     * The engine never heard the answer to its ask {@code w.askId()}: the grant that ask made is given back
     * as a return is (answered true after this step's {@link SlotOps}); an ask P has not seen is answered
     * false at once and refused if it comes within the reservation timeout ({@link GrantAsks}).
     */
    void withdraw(ProducerCommand.Withdraw w, long now) {
        Credit made = madeBy(w.askId());
        if (made == null) {
            try {
                asks.keepWithdrawal(w.askId(), now + state.config.reservationTimeout().toMillis());
                w.reply().complete(false);
            } catch (UnavailableException full) {
                w.reply().completeExceptionally(full);
            }
            return;
        }
        if (!made.closing()) {
            state.counters.creditsWithdrawn.incrementAndGet();
        }
        giveBack(new ProducerCommand.ReturnCredit(made.id(), w.reply()));
    }

    /** The grant held that the ask {@code askId} made, or null; grants are few, and asks rare. */
    private Credit madeBy(String askId) {
        if (askId == null) {
            return null;
        }
        for (Credit credit : byId.values()) {
            if (askId.equals(credit.askId())) {
                return credit;
            }
        }
        return null;
    }

    /** Keeps a read notification that names no lease but a granted nonce, for the commit that will follow. */
    boolean stashEarlyRead(long nonce, Credit.EarlyRead read) {
        if (nonce == LeaseNotification.NO_NONCE) {
            return false;
        }
        for (Credit credit : byId.values()) {
            if (!credit.closing() && credit.stash(nonce, read)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Expired and returned grants come back: first every unbound slot is zeroed (the normal exit), and
     * only in a later step, once the table holds none of its placeholders, are its blocks freed.
     */
    int reclaim(long now) {
        int n = 0;
        asks.prune(now);
        for (Credit credit : List.copyOf(byId.values())) {
            if (!credit.closing() && now >= credit.expiresAtMillis()) {
                credit.close();
                state.counters.creditsExpired.incrementAndGet();
            }
            if (!credit.closing() || granting.containsKey(credit)) {
                continue;
            }
            for (Lease placeholder : credit.placeholders()) {
                if (state.leases.find(placeholder.requestId()) != placeholder) {
                    credit.forgetPlaceholder(placeholder);
                } else if (placeholder.anyRankHeld()) {
                    exit.allRanks(placeholder);
                    n++;
                }
            }
            if (credit.noSlotHeld()) {
                state.blocks.free(credit.blockIds());
                credit.dropBlocks();
                byId.remove(credit.id());
                n++;
            }
        }
        return n;
    }

    /** Shutdown: unanswered grants fail, every grant closes; the loop's own exit of every lease zeroes their slots. */
    void closeAll(RuntimeException closing) {
        pending.forEach(g -> g.reply().completeExceptionally(closing));
        granting.values().forEach(g -> g.command().reply().completeExceptionally(closing));
        returning.forEach(r -> r.reply().completeExceptionally(closing));
        pending.clear();
        granting.clear();
        returning.clear();
        byId.values().forEach(Credit::close);
    }

    /** Granted slots not yet bound: held in the lease table, but no request's lease. */
    int unboundSlots() {
        int n = 0;
        for (Credit credit : byId.values()) {
            n += credit.placeholderCount();
        }
        return n;
    }

    private Credit open(String creditId, String requestId, long now) {
        Credit credit = byId.get(creditId);
        if (credit == null || credit.closing() || now >= credit.expiresAtMillis()) {
            throw new StateConflictException(requestId, "grant " + creditId + " is "
                    + (credit == null ? "unknown" : "closed (returned or expired)")
                    + ": request " + requestId + " cannot be committed to it; its params' slot is zeroed or"
                    + " will be, so a decoder declines them");
        }
        return credit;
    }
}
