package io.pdconnector.testing;

import io.pdconnector.producer.Commit;
import io.pdconnector.producer.CreditGrant;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.reference.ReferenceEngine;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The engine path's events in a {@link TrailReplay} ({@code CFG_GRANT}, issue 23). The replay is the
 * engine: it asks P for the model's two grants (g0: one block and one slot, g1: one block and no slot),
 * binds a0 to g0's block and slot, writes a0's KV into the block through P's registered memory, hands D
 * the params it builds from the grant, and commits where the trail's P applies the commit; a grant's
 * close (expiry or return in the model) is a return. As the Java loops keep every rule whatever rule the
 * trail's model broke, the replay's engine keeps the engine's: params only once the copy is done (G2),
 * block and slot of one grant (G5), no write into a grant P may have taken back (G6). Checked on Java:
 * every granted slot holds its nonce on every rank when the grant is answered (G1); the params P exports
 * at the commit are the ones the engine built; where the model's engine writes into a block P took back
 * (MUT_G6), P has taken it back; and, through {@link ReplayChecks}, the model's properties (an attempt
 * not yet committed has no lease on P; its params are lost once its grant is returned or its commit
 * refused, so a decline is then legitimate).
 */
final class ReplayGrantEvents {

    private static final int STEP_BOUND = 10;

    private final TrailReplay replay;
    private final CreditGrant[] grants = new CreditGrant[2];
    private final boolean[] returned = new boolean[2];
    /** a0's blocks: g0's (G5). */
    private int[] blocks;

    ReplayGrantEvents(TrailReplay replay) {
        this.replay = replay;
    }

    /** P grants g0 (1 block, 1 slot) and g1 (1 block, no slot) in one step; G1 holds when they are answered. */
    void grant() {
        CompletableFuture<CreditGrant> g0 = replay.p.facade().submitGrant(1, 1);
        CompletableFuture<CreditGrant> g1 = replay.p.facade().submitGrant(1, 0);
        // what every rank's slot holds at the moment P answers g0, in its step (the reply completes on the loop)
        List<Long> atAnswer = new ArrayList<>();
        g0.thenAccept(g -> g.leases().forEach(l -> {
            for (int rank = 0; rank < TrailReplay.TP; rank++) {
                atAnswer.add(replay.p.slotValue(rank, l.slot()));
            }
        }));
        replay.stepP();
        replay.require(answered(g0) && answered(g1), "P did not answer the grants in the step that took them: "
                + g0 + ", " + g1);
        grants[0] = g0.join();
        grants[1] = g1.join();
        replay.require(grants[0].blockIds().length == 1 && grants[0].leases().size() == 1
                && grants[1].blockIds().length == 1 && grants[1].leases().isEmpty(), "the grants are not the model's:"
                + " g0 " + describe(grants[0]) + ", g1 " + describe(grants[1]));
        CreditGrant.GrantedLease lease = grants[0].leases().getFirst();
        for (int rank = 0; rank < TrailReplay.TP; rank++) {
            long held = atAnswer.get(rank);
            replay.require(held == lease.nonce(), "g0 was answered while rank " + rank + "'s slot " + lease.slot()
                    + " held " + held + ", not its nonce " + lease.nonce() + " (slot_written_before_grant, G1)");
        }
        replay.log.add("  Java: g0 " + describe(grants[0]) + ", g1 " + describe(grants[1])
                + "; g0's slot held its nonce on every rank when P answered (G1)");
    }

    private static boolean answered(CompletableFuture<?> f) {
        return f.isDone() && !f.isCompletedExceptionally();
    }

    private static String describe(CreditGrant g) {
        return g.creditId() + " blocks " + Arrays.toString(g.blockIds()) + " leases " + g.leases();
    }

    void answered() {
        replay.log.add("  (Java answers a grant in the step that writes its slots, after the writes)");
    }

    void bind(ReplayAttempt at, int grantOfBlock) {
        at.viaGrant = true;
        blocks = grants[0].blockIds();
        if (grantOfBlock != 0) {
            replay.log.add("  the model's engine takes g" + grantOfBlock + "'s block with g0's slot (MUT_G5);"
                    + " the replay's engine keeps G5: g0's block");
        }
        replay.log.add("  engine: a" + at.index + " bound to blocks " + Arrays.toString(blocks) + ", slot "
                + grants[0].leases().getFirst().slot());
    }

    /** The engine writes a0's KV into its blocks on every rank, as a local engine does through the shared file. */
    void copy(ReplayAttempt at) {
        if (returned[0]) {
            replay.require(Arrays.stream(blocks).noneMatch(replay.p::blockTaken), "the trail's engine writes into g0's"
                    + " block once P took it back, but Java still holds it (copy_into_granted_block): "
                    + replay.p.snapshot());
            replay.log.add("  the model's engine writes into a block of g0 after P took it back (MUT_G6): Java took"
                    + " it back too; the replay's engine writes nothing past its deadline (G6)");
            return;
        }
        ReferenceEngine reference = new ReferenceEngine(Cluster.SMALL);
        for (int rank = 0; rank < TrailReplay.TP; rank++) {
            reference.write(replay.cluster.engine.region("p-p" + rank, "kv").orElseThrow().segment(), blocks,
                    at.tokens, TrailReplay.TP, rank);
        }
        at.copied = true;
        replay.log.add("  engine: a" + at.index + "'s KV written into P blocks " + Arrays.toString(blocks));
    }

    /** The params the engine builds from g0's template, with a0's blocks, slot and nonce. */
    void params(ReplayAttempt at) {
        if (!at.copied && !returned[0]) {
            replay.log.add("  the model's engine hands out params before its copy (MUT_G2); the replay's engine"
                    + " copies first (G2)");
            copy(at);
        }
        CreditGrant.GrantedLease lease = grants[0].leases().getFirst();
        Map<String, Object> m = new LinkedHashMap<>(grants[0].paramsTemplate());
        m.put("remote_request_id", at.requestId);
        m.put("remote_block_ids", List.of(Arrays.stream(blocks).boxed().toList()));
        m.put("remote_num_tokens", at.tokens.length);
        m.put("remote_lease_slot", lease.slot());
        m.put("remote_lease_nonce", lease.nonce());
        at.params = KvTransferParams.fromMap(m);
        if (returned[0]) {
            at.lost = true;
        }
        replay.log.add("  engine: params of a" + at.index + " handed out: slot " + lease.slot() + " nonce "
                + lease.nonce() + (at.lost ? " (g0 is already returned: lost)" : ""));
    }

    /** The commit reaches P: Java's answer may differ from the model's under a mutation; a refusal loses the params. */
    void commit(ReplayAttempt at, boolean modelAccepted) {
        CreditGrant.GrantedLease lease = grants[0].leases().getFirst();
        CompletableFuture<KvTransferParams> f = replay.p.facade().submitCommit(new Commit(grants[0].creditId(),
                at.requestId, at.tokens.length, blocks, lease.slot(), lease.nonce()));
        replay.stepP();
        replay.require(f.isDone(), "P did not answer the commit of a" + at.index + " in its step");
        boolean accepted = !f.isCompletedExceptionally();
        if (accepted) {
            replay.require(f.join().toMap().equals(at.params.toMap()), "P exported params " + f.join().toMap()
                    + " for a" + at.index + ", not the ones the engine handed out: " + at.params.toMap());
            at.committed = true;
        } else {
            at.lost = true;
        }
        replay.log.add("  Java " + (accepted ? "accepted" : "refused") + " the commit of a" + at.index
                + (accepted == modelAccepted ? "" : " (the model's P " + (modelAccepted ? "accepted" : "refused")
                + " it)") + "; early reads kept so far: " + replay.p.counters().earlyNotifications.get());
        replay.stepP(); // the clears the counted early reads queued; notif_own_attempt is checked after it
    }

    /** The model's grant closes (its expiry or a return): the replay's engine returns it. */
    void close(int g) {
        CompletableFuture<Boolean> f = replay.p.facade().submitReturn(grants[g].creditId());
        replay.stepP();
        replay.require(f.isDone() && f.join(), "P did not take back g" + g + " when returned: " + f);
        returned[g] = true;
        ReplayAttempt at = replay.attempts[0];
        if (g == 0 && at != null && at.viaGrant && !at.committed) {
            at.lost = true;
        }
        replay.log.add("  engine: g" + g + " (" + grants[g].creditId() + ") returned");
    }

    /**
     * The model frees a grant's unbound blocks here (and floods them): Java frees them once no slot of the
     * grant holds its nonce, perhaps in a step still to come; as soon as they are free they are flooded.
     */
    void reclaim(int g) {
        ReplayAttempt at = replay.attempts[0];
        if (g == 0 && at != null && at.committed) {
            replay.log.add("  (g0's block is a0's: nothing of g0 is left to free)");
            return;
        }
        int[] ids = grants[g].blockIds();
        for (int i = 0; i < STEP_BOUND && Arrays.stream(ids).anyMatch(replay.p::blockTaken); i++) {
            replay.stepP();
        }
        replay.require(Arrays.stream(ids).noneMatch(replay.p::blockTaken), "the trail frees g" + g + "'s blocks here;"
                + " Java still holds its blocks: " + replay.p.snapshot());
        replay.flood(ids);
    }

    /** D's read notification of a0 reaches P before the commit: P keeps it on the grant. */
    void earlyKept(ReplayAttempt at, int rank) {
        long before = replay.p.counters().earlyNotifications.get();
        replay.deliverRead(at, rank);
        replay.log.add("  Java kept " + (replay.p.counters().earlyNotifications.get() - before)
                + " early read(s) of a" + at.index + " on rank " + rank);
    }

    /** A read {@code r1:1:<a0's nonce>} from a peer that holds a0's params under request 1's id. */
    void otherIdRead(int rank) {
        long nonce = grants[0].leases().getFirst().nonce();
        replay.chaos().send(rank, "r1:1:" + nonce);
        replay.log.add("  r1:1:" + nonce + " sent to rank " + rank);
        replay.stepP();
        replay.stepP();
    }

    void counted() {
        replay.log.add("  (Java counts the reads it kept at the commit, those naming the committed request only)");
        replay.stepP();
    }

    /** End of the trail: what the engine still holds goes back (the model's grants all close, at the latest expire). */
    void returnAll() {
        for (int g = 0; g < grants.length; g++) {
            if (grants[g] != null && !returned[g]) {
                replay.p.facade().submitReturn(grants[g].creditId());
                returned[g] = true;
                replay.log.add("  end: g" + g + " returned");
            }
        }
    }
}
