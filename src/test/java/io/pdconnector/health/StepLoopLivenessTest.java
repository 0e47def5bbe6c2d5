package io.pdconnector.health;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.loop.StepLoop;
import io.pdconnector.loop.StepWorker;
import java.time.Duration;
import java.util.List;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.junit.jupiter.api.Test;

/** Issue 12: a step loop that died says why in the liveness check operators (and the kubelet) see. */
class StepLoopLivenessTest {

    private static final Duration DEADLINE = Duration.ofSeconds(10);

    /** Steps twice, then throws as a bug would. */
    private static final class BrokenWorker implements StepWorker {
        private int steps;

        @Override
        public String name() {
            return "consumer-x";
        }

        @Override
        public void open() {
        }

        @Override
        public int doWork() {
            if (++steps == 3) {
                throw new IllegalStateException("pull q cannot move from RECEIVED to READING");
            }
            return 1;
        }

        @Override
        public void close() {
        }
    }

    @Test
    void aLoopThatDiedIsDownWithItsCause() throws InterruptedException {
        StepLoop loop = StepLoop.start(new BrokenWorker(), DEADLINE);
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        while (loop.turning() && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertFalse(loop.turning(), "the loop stopped within " + DEADLINE);

        HealthCheckResponse health = StepLoopLiveness.check(List.of(loop), DEADLINE);

        assertEquals(HealthCheckResponse.Status.DOWN, health.getStatus());
        String failed = String.valueOf(health.getData().orElseThrow().get("failed"));
        assertTrue(failed.contains("consumer-x stopped: IllegalStateException: pull q cannot move from RECEIVED"
                + " to READING"), failed);
        assertThrows(IllegalStateException.class, () -> loop.stop(DEADLINE), "stop joins the thread, rethrowing");
    }
}
