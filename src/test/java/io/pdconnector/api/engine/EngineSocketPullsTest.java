package io.pdconnector.api.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.api.DecoderPulls;
import io.pdconnector.api.problem.Problem;
import io.pdconnector.consumer.DeclineReason;
import io.pdconnector.consumer.PullOutcome;
import io.pdconnector.consumer.PullState;
import io.pdconnector.consumer.PullTimeline;
import io.pdconnector.loop.Deadlines;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * Op pulls at its deadline: a pull still undecided is cancelled and answered 503, and a pull D decided in the
 * instant the wait ran out (its cancel came too late) is answered with its outcome, so that the plugin releases
 * what D holds for it instead of leaving it to the retention.
 */
class EngineSocketPullsTest {

    /** A pull the loop decides just as its waiter gives up: the cancel finds it decided. */
    private static final class DecidedAtTheDeadline extends CompletableFuture<PullOutcome> {
        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            complete(outcome("late"));
            return super.cancel(mayInterruptIfRunning);
        }
    }

    @Test
    void atTheDeadlineAnUndecidedPullIs503AndOneDecidedInThatInstantGetsItsOutcome() throws IOException {
        CompletableFuture<PullOutcome> never = new CompletableFuture<>();
        List<DecoderPulls.Submitted> started = List.of(
                new DecoderPulls.Submitted("early", CompletableFuture.completedFuture(outcome("early")), 0),
                new DecoderPulls.Submitted("never", never, 0),
                new DecoderPulls.Submitted("late", new DecidedAtTheDeadline(), 0));
        BlockingQueue<Integer> decided = new ArrayBlockingQueue<>(3);
        decided.add(0);
        Map<Integer, EngineSocketCalls.Reply> sent = new TreeMap<>();

        EngineSocketPulls.answerAsDecided(started, decided, (index, reply) -> assertEquals(null, sent.put(index,
                reply), "one frame per pull"), Duration.ofMillis(50), pull -> new EngineSocketCalls.Reply(200,
                Deadlines.await(pull.outcome(), Duration.ZERO, pull.requestId()).requestId(), false));

        assertEquals(List.of(0, 1, 2), List.copyOf(sent.keySet()));
        assertEquals(new EngineSocketCalls.Reply(200, "early", false), sent.get(0));
        assertEquals(503, sent.get(1).status());
        assertEquals("deadline-exceeded", ((Problem) sent.get(1).body()).reason());
        assertTrue(never.isCancelled(), "cancelled, so the loop aborts it");
        assertEquals(new EngineSocketCalls.Reply(200, "late", false), sent.get(2),
                "decided before the cancel: answered, so the plugin releases it");
    }

    private static PullOutcome outcome(String requestId) {
        return new PullOutcome(requestId, PullState.DECLINED, DeclineReason.LEASE_MISMATCH, new int[0], null,
                new PullTimeline(1, 0, 0, 0, 2));
    }
}
