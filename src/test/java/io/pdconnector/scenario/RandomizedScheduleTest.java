package io.pdconnector.scenario;

import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.LoadFailurePolicy;
import io.pdconnector.consumer.ConsumerFixture;
import io.pdconnector.consumer.PullOutcome;
import io.pdconnector.consumer.PullState;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import io.pdconnector.testing.RawPeer;
import io.pdconnector.testing.ScheduleOp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Thousands of seeded random interleavings of prefills, pulls (fresh and stale), heartbeats,
 * lapses, block and id reuse, duplicate and late notifications and aborts, on small pools so that
 * reuse is constant. Invariant: a pull is RECEIVED only with exactly the reference KV of its
 * prompt, and in the end nothing is held. The schedules the model checker found against each
 * rule's removal are replayed step by step, with the same checks, by {@link TrailReplayTest}.
 */
class RandomizedScheduleTest {

    private static final int OPERATIONS = 3_000;
    private static final String[] IDS = {"r0", "r1", "r2", "r3", "r4", "r5"};

    private record Attempt(KvTransferParams params, int[] tokens) {
    }

    private final Cluster cluster = new Cluster();
    private final List<Attempt> attempts = new ArrayList<>();
    private final Map<String, CompletableFuture<PullOutcome>> pulls = new LinkedHashMap<>();
    private final Map<String, Integer> outcomes = new LinkedHashMap<>();
    private ProducerFixture p;
    private ConsumerFixture d;
    private RawPeer chaos;
    private Random random;
    private int nextPull;

    @AfterEach
    void close() {
        cluster.close();
    }

    @ParameterizedTest(name = "seed {0}: P TP{1}, D TP{2}, {3}")
    @CsvSource({"1,1,1,FAIL", "2,2,1,RECOMPUTE", "3,1,2,FAIL", "4,2,2,RECOMPUTE", "5,1,1,RECOMPUTE"})
    void receivedKvIsAlwaysTheReferenceAndNothingLeaks(long seed, int prefillTp, int decodeTp,
            LoadFailurePolicy policy) {
        random = new Random(seed);
        p = cluster.producer(cluster.producerConfig("p").tpSize(prefillTp).blocks(8, 3, 0));
        d = cluster.consumer(cluster.consumerConfig("d", true, policy).tpSize(decodeTp).blocks(8));
        chaos = cluster.rawPeer("chaos", "p");

        for (int i = 0; i < OPERATIONS; i++) {
            randomOperation();
            collectDecided();
        }
        drain();

        assertTrue(count("RECEIVED") > 50, "the schedule exercised clean pulls: " + outcomes);
        assertTrue(count("lease_mismatch") > 10, "and the lapse-and-reuse race: " + outcomes);
        assertTrue(p.counters().staleNotifications.get() > 0, "and stale notifications");
        cluster.assertNoLeak();
    }

    private void randomOperation() {
        switch (ScheduleOp.draw(random)) {
            case PREFILL -> prefill();
            case PULL -> pull();
            case ADVANCE_CLOCK -> cluster.clock.advance(Duration.ofMillis(random.nextInt(12_000)));
            case STEP_PRODUCERS -> cluster.stepProducers();
            case STEP_CONSUMERS -> cluster.stepConsumers();
            case REPLAY_NOTIFICATION -> replayNotification();
            case CHAOS_HEARTBEAT -> chaosHeartbeat();
            case ABORT_PREFILL -> p.facade().submitAbort(IDS[random.nextInt(IDS.length)]);
            case ABORT_PULL -> {
                if (!pulls.isEmpty()) {
                    d.submitAbort(List.copyOf(pulls.keySet()).get(random.nextInt(pulls.size())));
                }
            }
        }
    }

    private void prefill() {
        int[] tokens = prompt(random.nextInt(1_000_000), 1 + random.nextInt(12));
        CompletableFuture<KvTransferParams> f = p.facade().submitPrefill(IDS[random.nextInt(IDS.length)], tokens);
        cluster.stepProducers();
        if (!f.isCompletedExceptionally()) {
            attempts.add(new Attempt(f.join(), tokens));
        }
    }

    /** Mostly recent attempts (likely live), sometimes old ones (likely lapsed and reused). */
    private void pull() {
        if (attempts.isEmpty()) {
            return;
        }
        int back = random.nextInt(4) == 0 ? random.nextInt(attempts.size()) : random.nextInt(Math.min(3,
                attempts.size()));
        Attempt a = attempts.get(attempts.size() - 1 - back);
        String id = "d" + nextPull++;
        pulls.put(id, d.submitPull(id, a.tokens(), a.params()));
    }

    /**
     * A heartbeat for a random id: without a nonce (a peer that knows only the id), or with the nonce
     * of some attempt (a late decoder of an earlier attempt, or the current one's).
     */
    private void chaosHeartbeat() {
        String entry = IDS[random.nextInt(IDS.length)];
        if (!attempts.isEmpty() && random.nextBoolean()) {
            KvTransferParams a = attempts.get(random.nextInt(attempts.size())).params();
            entry = a.remoteRequestId() + (a.hasLease() ? ":" + a.remoteLeaseNonce() : "");
        }
        chaos.send(random.nextInt(p.config().tpSize()), "HB:" + entry);
    }

    /** A late or duplicated read notification of some attempt, as a network or a slow decoder makes. */
    private void replayNotification() {
        if (attempts.isEmpty()) {
            return;
        }
        KvTransferParams a = attempts.get(random.nextInt(attempts.size())).params();
        if (a.hasLease()) {
            chaos.send(random.nextInt(a.tpSize()), a.remoteRequestId() + ":" + (1 + random.nextInt(2)) + ":"
                    + a.remoteLeaseNonce());
        }
    }

    private void collectDecided() {
        for (var e : List.copyOf(pulls.entrySet())) {
            CompletableFuture<PullOutcome> f = e.getValue();
            if (!f.isDone()) {
                continue;
            }
            pulls.remove(e.getKey());
            PullOutcome o = f.join();
            outcomes.merge(o.reason() == null ? o.state().name() : o.reason().wire(), 1, Integer::sum);
            if (o.state() == PullState.RECEIVED || o.state() == PullState.RECOMPUTED) {
                assertTrue(cluster.matches(d, e.getKey()), o.state() + " pull " + e.getKey()
                        + " holds KV that is not its prompt's");
                cluster.release(d, e.getKey());
            }
        }
    }

    private void drain() {
        for (int i = 0; i < 10 && !pulls.isEmpty(); i++) {
            cluster.clock.advance(d.config().pullTimeout());
            cluster.steps(3);
            collectDecided();
        }
        assertEquals(Map.of(), pulls, "every pull was decided");
        cluster.lapseAll();
    }

    private int count(String key) {
        return outcomes.getOrDefault(key, 0);
    }
}
