package io.pdconnector.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.consumer.ConsumerFacade;
import io.pdconnector.consumer.PullOutcome;
import io.pdconnector.consumer.PullScheduler;
import io.pdconnector.consumer.PullState;
import io.pdconnector.consumer.PullTimeline;
import io.pdconnector.controlplane.EmbeddedStore;
import io.pdconnector.controlplane.InstanceRecord;
import io.pdconnector.controlplane.Registry;
import io.pdconnector.controlplane.RegistryCounters;
import io.pdconnector.error.PdException;
import io.pdconnector.error.UnavailableException;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.protocol.ProducerIncarnation;
import io.pdconnector.testing.Cluster;
import io.pdconnector.testing.ManualClock;
import io.smallrye.mutiny.Uni;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 13: the pull endpoint waits for D's loop without a thread ({@link DecoderPulls#reply}), yet
 * keeps the deadline the blocking wait had: a loop that does not answer within
 * {@code pd.http.request-deadline} gives the caller a 503, and the pull is cancelled, so the loop aborts it.
 */
class DecoderPullsTest {

    private final Cluster cluster = new Cluster();
    private final RegistryCounters counters = new RegistryCounters();
    private final Registry registry = new Registry(new EmbeddedStore(counters), instance("d", false), Duration.ofSeconds(1),
            counters, new ManualClock());

    @AfterEach
    void close() {
        registry.close();
        cluster.close();
    }

    @Test
    void aLoopThatDoesNotAnswerInTimeIsA503AndThePullIsCancelled() {
        registry.start();
        registry.upsert(instance("p", true));
        // a loop that is never stepped: the command waits in its queue
        PullScheduler loop = new PullScheduler(cluster.consumerConfig("d").build(), cluster.transferEngine(),
                cluster.registry, cluster.clock);
        DecoderPulls pulls = decoderPulls(new ConsumerFacade(loop, Duration.ofMillis(100)));

        DecoderPulls.Submitted submitted = pulls.submit(request("r1"), false, false);
        Uni<PullResponse> pull = pulls.reply(submitted, false, false, Runnable::run);

        UnavailableException e = assertThrows(UnavailableException.class,
                () -> pull.await().atMost(Duration.ofSeconds(10)));
        assertTrue(e.deadlineExceeded(), e.getMessage());
        assertTrue(submitted.outcome().isCancelled(), "cancelled, so the loop aborts it when it gets to it");
    }

    /**
     * Issue 22: the HTTP client went away (its close handler cancelled the pull, here before the wait began, as
     * when the connection closed before the resource method returned). That is an expected outcome, the
     * caller-gone answer nobody reads, not a CancellationException the mappers log as an unexpected failure
     * and answer 500.
     */
    @Test
    void aPullWhoseCallerWentAwayEndsAsClientGoneNotAsAnUnexpectedFailure() {
        registry.start();
        registry.upsert(instance("p", true));
        PullScheduler loop = new PullScheduler(cluster.consumerConfig("d").build(), cluster.transferEngine(),
                cluster.registry, cluster.clock);
        DecoderPulls pulls = decoderPulls(new ConsumerFacade(loop, Duration.ofSeconds(30)));

        DecoderPulls.Submitted submitted = pulls.submit(request("r2"), false, false);
        submitted.outcome().cancel(false);
        Uni<PullResponse> pull = pulls.reply(submitted, false, false, Runnable::run);

        PdException e = assertThrows(PdException.class, () -> pull.await().atMost(Duration.ofSeconds(10)));
        assertEquals("client-gone", e.reason(), e.toString());
        assertEquals("r2", e.requestId());
    }

    /**
     * A pull the loop decided in the instant its waiter's deadline ran out: the cancel comes too late, so the caller
     * (op pull's blocking wait, or the HTTP pull's) gets the outcome and releases what D holds for it, not a 503
     * that would leave it to the retention. A pull still undecided is cancelled and a 503.
     */
    @Test
    void aPullDecidedAsItsWaitRanOutGivesItsOutcomeNotA503() {
        PullScheduler loop = new PullScheduler(cluster.consumerConfig("d").build(), cluster.transferEngine(),
                cluster.registry, cluster.clock);
        ConsumerFacade consumer = new ConsumerFacade(loop, Duration.ofMillis(50));
        PullOutcome decided = new PullOutcome("r3", PullState.RECEIVED, null, new int[] {7}, null,
                new PullTimeline(1, 0, 0, 0, 2));

        assertEquals(decided, consumer.await(decidedAtTheDeadline(decided), "r3"));
        assertEquals(decided, ConsumerFacade.atDeadline(decidedAtTheDeadline(decided), "r3", Duration.ofMillis(50))
                .join());

        CompletableFuture<PullOutcome> never = new CompletableFuture<>();
        UnavailableException e = assertThrows(UnavailableException.class, () -> consumer.await(never, "r4"));
        assertTrue(e.deadlineExceeded(), e.getMessage());
        assertTrue(never.isCancelled(), "an undecided pull is cancelled, so the loop aborts it");
    }

    private static CompletableFuture<PullOutcome> decidedAtTheDeadline(PullOutcome outcome) {
        return new CompletableFuture<>() {
            @Override
            public boolean cancel(boolean mayInterruptIfRunning) {
                complete(outcome);
                return super.cancel(mayInterruptIfRunning);
            }
        };
    }

    private DecoderPulls decoderPulls(ConsumerFacade consumer) {
        return new DecoderPulls(registry, () -> Optional.of(consumer), null, null);
    }

    private static PullRequest request(String requestId) {
        return new PullRequest(requestId, null, new int[] {1, 2, 3, 4}, params().toMap(), null, null);
    }

    private static KvTransferParams params() {
        return KvTransferParams.fromMap(Map.of("do_remote_prefill", true, "do_remote_decode", false,
                "remote_engine_id", "p", "remote_request_id", "r1", "remote_block_ids", List.of(List.of(0)),
                "remote_host", "127.0.0.1", "remote_port", 9000, "tp_size", 1, "remote_num_tokens", 4,
                "transfer_mode", "pull"));
    }

    private static InstanceRecord instance(String engineId, boolean producer) {
        List<HandshakeMetadata> ranks = producer ? List.of(new HandshakeMetadata(engineId, 0, 1,
                ProducerIncarnation.agentName(engineId, 0), new byte[] {1}, 4096, 1 << 20, ModelGeometry.DEFAULT, "HND",
                4, 8192, 8, HandshakeMetadata.CONNECTOR_VERSION, "hash")) : List.of();
        return new InstanceRecord(engineId, producer ? "producer" : "consumer", "127.0.0.1", producer ? 9000 : 8000, 1,
                "e1", HandshakeMetadata.CONNECTOR_VERSION, "hash", ranks, null, true, 0);
    }
}
