package io.pdconnector.testing;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.pdconnector.config.LoadFailurePolicy;
import io.pdconnector.config.ProducerConfig;
import io.pdconnector.consumer.ConsumerFixture;
import io.pdconnector.consumer.PullState;
import io.pdconnector.producer.Lease;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;
import java.util.stream.IntStream;

/**
 * Replays a model-checker trail ({@link Trail}) against the Java loops on loopback, as a
 * regression schedule. The trail was found against a model with one rule removed; the replay
 * keeps the trail's environment (when prefills and pulls arrive, when each rank's READ and slot
 * READ lands, when a lease expires, when notifications and heartbeats arrive, a restart, the
 * flood that overwrites freed blocks) and lets the Java code do its own protocol steps, then checks the model's
 * properties ({@link ReplayChecks}). Events that are a protocol step in the model (slot writes,
 * clears, exports, D's decision) become a step of that side's loop.
 *
 * <p>Where Java differs from the model's worst case the replay says so in its log: READs of a
 * restarted producer fail (its memory is retired), so a pull in flight across the restart is
 * retried by the router with the same params against the new incarnation, which is where the
 * model's in-flight pull reads; a reused request id that Java still holds is aborted by the
 * router before the retry (Java refuses it otherwise).
 */
public final class TrailReplay implements AutoCloseable {

    static final int P_BLOCKS = 3;
    /** P ranks = D ranks, as in the model. */
    static final int TP = 2;
    static final int TOKENS = Cluster.SMALL.blockTokens();
    /** A tick of the model's clock (CFG_LIFE): its lease of 3 ticks is the replay's 30 s lease. */
    static final Duration TICK = Duration.ofSeconds(10);
    /** The model's maximum lifetime, 4 ticks (CFG_LIFE). */
    static final Duration MAX_LIFETIME = TICK.multipliedBy(4);
    private static final int STEP_BOUND = 10;
    /** The model's flood value: bytes of some other prompt. */
    private static final byte FLOOD = 9;

    final Cluster cluster = new Cluster();
    final List<String> log = new ArrayList<>();
    final ReplayAttempt[] attempts = new ReplayAttempt[3];
    final List<ReplayPull> pulls = new ArrayList<>();
    private final Trail trail;
    private final ReplayChecks checks;
    private final ReplayTrustEvents trust;
    private final ReplayGrantEvents grants;
    private final ProducerConfig producerConfig;
    ProducerFixture p;
    ConsumerFixture d;
    private RawPeer chaos;
    private int chaosPeers;
    private int transfersLogged;
    private int dSteps;

    public TrailReplay(Trail trail) {
        this.trail = trail;
        this.checks = new ReplayChecks(this);
        this.trust = new ReplayTrustEvents(this, checks);
        this.grants = new ReplayGrantEvents(this);
        boolean oneSlot = trail.scarce() || trail.granted();
        ProducerConfig.Builder pc = cluster.producerConfig("p").tpSize(TP).blocks(P_BLOCKS, 2, oneSlot ? 1 : 2);
        this.producerConfig = (trail.timed() ? pc.leaseMaxLifetime(MAX_LIFETIME) : pc).build();
        p = cluster.producer(producerConfig);
        d = cluster.consumer(cluster.consumerConfig("d", true, LoadFailurePolicy.FAIL).tpSize(TP)
                .blocks(oneSlot ? 1 : 2).pullTimeout(Duration.ofMinutes(30)));
    }

    /**
     * The trail, then every gate opened until all is decided, then nothing may be left held. A READ
     * released in flight keeps landing, as a UCX cancel may let it: only the quarantine (L13) is safe.
     */
    public void run() {
        cluster.engine.gates.close("d-");
        cluster.engine.gates.leakCancels();
        for (Trail.Event e : trail.events()) {
            log.add("model: " + e);
            apply(e);
            logTransfers();
            checks.afterEvent();
        }
        drain();
        logTransfers();
    }

    private void apply(Trail.Event e) {
        switch (e.kind()) {
            case SCHEDULE -> schedule(attempt(e.attempt(), e.number("req")));
            case EXPORT -> require(attempts[e.attempt()].params != null, "the trail exports a" + e.attempt()
                    + " but Java has not exported it");
            case WRITE_SLOT, CLEAR_SLOT, LATE_ZERO, SLOT_BACK_EARLY -> stepP();
            case EXPIRE -> expire(attempts[e.attempt()]);
            case FREE -> free(attempts[e.attempt()]);
            case FLOOD -> flood(freeBlocks());
            case HEARTBEAT -> trust.heartbeat(attempts[e.attempt()]);
            case NOTIFICATION_COUNTED, NOTIFICATION_IGNORED -> deliverRead(attempts[e.attempt()], e.rank());
            case FORGED_NOTIFICATION -> trust.forged("r" + e.number("req"), e.rank());
            case TICK -> trust.tick();
            case PULL_ENDS_EARLY -> trust.endEarly(attempts[e.attempt()]);
            case QUARANTINE_ENDS -> stepD();
            case NOTIFICATION_DUPLICATED -> attempts[e.attempt()].duplicated = true;
            case RESTART -> restart();
            case ROUTER_AGAIN -> log.add("  (the retry is prefilled at its schedule event)");
            case NOTIFY -> log.add("  (Java notifies when it decides; held until a delivery event)");
            case PULL_START -> startPull(attempts[e.attempt()], "pull-a" + e.attempt());
            case READ_LANDS -> trust.landBlockRead(attempts[e.attempt()], e.rank());
            case SLOT_READ -> slotRead(e.rank(), e.number("result") == 3);
            case DECIDE -> stepDUntil(() -> attempts[e.attempt()].pull.decided(), 3);
            case DECODE_DONE -> attempts[e.attempt()].pull.releaseWhenDecided = true;
            case GRANT -> grants.grant();
            case GRANT_ANSWERED -> grants.answered();
            case ENGINE_BIND -> grants.bind(attempt(e.attempt(), 0), e.number("g"));
            case ENGINE_COPY -> grants.copy(attempts[e.attempt()]);
            case ENGINE_PARAMS -> grants.params(attempts[e.attempt()]);
            case ENGINE_PAST_DEADLINE, ENGINE_COMMIT_SENT, ENGINE_DIES -> log.add("  (the engine's own step)");
            case COMMIT -> grants.commit(attempts[e.attempt()], e.word("outcome").equals("accepted"));
            case GRANT_CLOSES -> grants.close(e.number("g"));
            case GRANT_BLOCKS_FREE_AT_CLOSE, RECLAIM -> grants.reclaim(e.number("g"));
            case PLACEHOLDER_FREE -> stepP();
            case EARLY_KEPT -> grants.earlyKept(attempts[e.attempt()], e.rank());
            case OTHER_ID_READ -> grants.otherIdRead(e.rank());
            case EARLY_COUNTED, EARLY_NOT_COUNTED -> grants.counted();
        }
    }

    ReplayAttempt attempt(int a, int req) {
        if (attempts[a] == null) {
            attempts[a] = new ReplayAttempt(a, "r" + req, Cluster.prompt(10 + a, TOKENS));
        }
        return attempts[a];
    }

    private void schedule(ReplayAttempt at) {
        cluster.clock.advance(Duration.ofSeconds(1));
        if (p.lease(at.requestId) != null) {
            log.add("  Java still holds " + at.requestId + " and would refuse the retry: the router aborts it");
            p.facade().submitAbort(at.requestId);
            markLost(at.requestId);
            stepPUntil(() -> p.lease(at.requestId) == null);
        }
        CompletableFuture<KvTransferParams> f = p.facade().submitPrefill(at.requestId, at.tokens);
        stepP();
        require(f.isDone() && !f.isCompletedExceptionally(), "the prefill of a" + at.index + " was not exported: "
                + f);
        at.params = f.join();
        log.add("  Java: a" + at.index + " blocks " + Arrays.toString(at.params.blockIds()) + " slot "
                + at.params.remoteLeaseSlot() + " nonce " + at.params.remoteLeaseNonce());
    }

    /** The lease clock runs out: the clock moves to its expiry, unless another lease would lapse with it. */
    private void expire(ReplayAttempt at) {
        Lease lease = at.lease(p);
        if (lease == null || !lease.isLive(cluster.clock.millis())) {
            log.add("  Java: a" + at.index + " is not live, nothing expires");
            stepP();
            return;
        }
        if (otherLeaseLapsesBy(at, lease.expiresAtMillis())) {
            log.add("  another lease would lapse first: a" + at.index + " is aborted instead (the same release)");
            p.facade().submitAbort(at.requestId);
        } else {
            cluster.clock.advance(Duration.ofMillis(Math.max(0, lease.expiresAtMillis() - cluster.clock.millis())));
        }
        at.lost = true;
        stepP();
    }

    private boolean otherLeaseLapsesBy(ReplayAttempt at, long when) {
        for (ReplayAttempt other : attempts) {
            Lease l = other == null || other == at ? null : other.lease(p);
            if (l != null && l.isLive(cluster.clock.millis()) && l.expiresAtMillis() <= when) {
                return true;
            }
        }
        return false;
    }

    /** The model floods a freed block at once (another prompt's KV): here it is overwritten in place. */
    private void free(ReplayAttempt at) {
        stepPUntil(() -> at.lease(p) == null);
        require(at.lease(p) == null, "the trail frees a" + at.index + " here; Java still holds it: "
                + p.snapshot());
        flood(at.params.blockIds());
    }

    /**
     * Writes flood bytes into P blocks on every rank, straight into the registered memory and
     * without a producer step, as the model's flood is part of the free (or a lazy flood's own event).
     */
    void flood(int[] blocks) {
        long blockBytes = Cluster.SMALL.blockBytes(TP);
        for (int r = 0; r < TP; r++) {
            var kv = cluster.engine.region("p-p" + r, "kv").orElseThrow().segment();
            for (int b : blocks) {
                kv.asSlice(b * blockBytes, blockBytes).fill(FLOOD);
            }
        }
        log.add("  flooded P blocks " + Arrays.toString(blocks));
    }

    /** The blocks no attempt's lease holds (a lazy flood may overwrite any of them). */
    private int[] freeBlocks() {
        Set<Integer> held = new HashSet<>();
        for (ReplayAttempt at : attempts) {
            Lease l = at == null ? null : p.lease(at.requestId);
            if (l != null) {
                Arrays.stream(l.blockIds()).forEach(held::add);
            }
        }
        return IntStream.range(0, P_BLOCKS).filter(b -> !held.contains(b)).toArray();
    }

    /** Each attempt's lease expiry on P now (-1: it holds none). */
    long[] expiries() {
        long[] e = new long[attempts.length];
        for (int i = 0; i < attempts.length; i++) {
            Lease l = attempts[i] == null ? null : attempts[i].lease(p);
            e[i] = l == null ? -1 : l.expiresAtMillis();
        }
        return e;
    }

    /** D's read notification of {@code at} to P rank {@code rank}; a second delivery is a duplicate. */
    void deliverRead(ReplayAttempt at, int rank) {
        String prefix = at.requestId + ":";
        String nonce = ":" + at.params.remoteLeaseNonce();
        int n = cluster.engine.gates.deliver(h -> h.to().equals("p-p" + rank) && h.text().startsWith(prefix)
                && h.text().endsWith(nonce));
        if (n == 0 && at.duplicated && at.deliveredTo.contains(rank)) {
            chaos().send(rank, at.requestId + ":1" + nonce);
            n = 1;
        }
        if (n == 0) {
            log.add("  Java has not notified a" + at.index + " to rank " + rank + " yet (it notifies after the"
                    + " slot check): delivered at the end");
        } else {
            at.deliveredTo.add(rank);
        }
        // the model's event includes the zeroing and the report: Java counts in one step, clears in the next
        stepP();
        stepP();
    }

    /**
     * P's process ends: leases, slots and blocks go with it, and so does its inbox. Its successor
     * has the next epoch. A pull in flight is retried by the router against the new incarnation.
     */
    private void restart() {
        cluster.stop(p);
        cluster.engine.gates.discard(h -> h.to().startsWith("p-p"));
        for (ReplayAttempt at : attempts) {
            if (at != null && at.params != null) {
                at.lost = true;
            }
        }
        p = cluster.producer(producerConfig);
        chaos = null;
        for (ReplayPull run : List.copyOf(pulls)) {
            if (!run.decided() && run.attempt.pull == run) {
                log.add("  pull of a" + run.attempt.index + " was in flight: retried with the same params");
                startPull(run.attempt, run.pullId + "-retry");
            }
        }
    }

    private void startPull(ReplayAttempt at, String pullId) {
        require(at.params != null, "the trail pulls a" + at.index + " which Java never exported");
        ReplayPull run = new ReplayPull(at, pullId, d.submitPull(pullId, at.tokens, at.params));
        at.pull = run;
        pulls.add(run);
        stepD();
    }

    void land(ReadKind kind, int rank) {
        cluster.engine.gates.permit(kind, "p-p" + rank);
        stepD();
    }

    private void slotRead(int rank, boolean fails) {
        if (fails) {
            checks.injectedSlotFailures++;
            cluster.engine.gates.failNext(ReadKind.SLOT, "p-p" + rank);
        }
        land(ReadKind.SLOT, rank);
    }

    /** Every gate open and every held notification delivered, until every pull is decided. */
    private void drain() {
        log.add("end of trail: every READ may land, every notification arrives");
        cluster.engine.gates.open();
        for (int i = 0; i < 4 * STEP_BOUND && !pulls.stream().allMatch(ReplayPull::decided); i++) {
            deliverAllHeld();
            stepP();
            stepD();
        }
        assertTrue(pulls.stream().allMatch(ReplayPull::decided), "every pull is decided once its READs land: "
                + pulls);
        checks.afterEvent();
        checks.atEnd();
        deliverAllHeld();
        grants.returnAll();
        stepP();
        stepP();
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    /** What landed, failed, was cancelled or reached P since the last event, from the engine's log. */
    private void logTransfers() {
        List<String> events = cluster.engine.events;
        synchronized (events) {
            for (; transfersLogged < events.size(); transfersLogged++) {
                String t = events.get(transfersLogged);
                if (t.matches("status \\S+ \\S+ (DONE|FAILED)") || t.startsWith("cancel ") || t.startsWith("notify ")) {
                    log.add("  loopback: " + t);
                }
            }
        }
    }

    /** Every held notification, noting which attempt's read notifications reached which rank. */
    private void deliverAllHeld() {
        cluster.engine.gates.deliver(h -> {
            for (ReplayAttempt at : attempts) {
                if (at != null && at.params != null && at.params.hasLease() && h.text().startsWith(at.requestId + ":")
                        && h.text().endsWith(":" + at.params.remoteLeaseNonce())) {
                    at.deliveredTo.add(Integer.parseInt(h.to().substring("p-p".length())));
                }
            }
            return true;
        });
    }

    void stepP() {
        cluster.stepProducers();
        checks.afterProducerStep();
    }

    /** One D step; a block READ still in flight when a pull was decided is cancelled or quarantined in it. */
    void stepD() {
        long cancels = cluster.engine.count("cancel");
        long quarantined = d.counters().readsQuarantined.get();
        cluster.stepConsumers();
        dSteps++;
        boolean cancelled = cluster.engine.count("cancel") > cancels
                || d.counters().readsQuarantined.get() > quarantined;
        for (ReplayPull run : pulls) {
            if (run.decidedAtStep < 0 && run.future.isDone()) {
                run.decidedAtStep = dSteps;
                run.cancelledReadsWhenDecided = cancelled;
            }
        }
    }

    private void stepPUntil(BooleanSupplier done) {
        for (int i = 0; i < STEP_BOUND && !done.getAsBoolean(); i++) {
            stepP();
        }
    }

    private void stepDUntil(BooleanSupplier done, int bound) {
        for (int i = 0; i < bound && !done.getAsBoolean(); i++) {
            stepD();
        }
    }

    /** D's answer to a command, stepping only D. */
    <T> T awaitD(CompletableFuture<T> reply) {
        stepDUntil(reply::isDone, STEP_BOUND);
        require(reply.isDone(), "D did not answer within " + STEP_BOUND + " steps");
        return reply.join();
    }

    /** Every exported attempt of {@code requestId} (the one being scheduled has no params yet). */
    private void markLost(String requestId) {
        for (ReplayAttempt at : attempts) {
            if (at != null && at.params != null && at.requestId.equals(requestId)) {
                at.lost = true;
            }
        }
    }

    RawPeer chaos() {
        if (chaos == null) {
            chaos = cluster.rawPeer("chaos" + chaosPeers++, "p");
        }
        return chaos;
    }

    void require(boolean ok, String why) {
        if (!ok) {
            fail(trail.name() + ": " + why + "\n" + String.join("\n", log));
        }
    }

    /** The replay's log: each model event and what Java did with it. */
    public String transcript() {
        return String.join("\n", log);
    }

    public List<String> outcomes() {
        return pulls.stream().map(r -> r.pullId + " " + (r.outcome == null ? "undecided"
                : r.outcome.state() == PullState.DECLINED ? r.outcome.reason().wire() : r.outcome.state().name()))
                .toList();
    }

    @Override
    public void close() {
        cluster.close();
    }
}
