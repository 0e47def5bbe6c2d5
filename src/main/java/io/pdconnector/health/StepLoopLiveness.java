package io.pdconnector.health;

import io.pdconnector.loop.StepLoop;
import io.pdconnector.runtime.ConnectorRuntime;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;
import org.eclipse.microprofile.health.Liveness;

/**
 * Live while every step loop of this instance is turning. A loop whose thread died, or that has not
 * finished a step for {@code pd.loop.stall-threshold} (a step never blocks, so that means it is stuck),
 * makes the pod restartable; the check names the loop and, for one a step killed, what that step threw.
 */
@Liveness
@ApplicationScoped
public class StepLoopLiveness implements HealthCheck {

    private final ConnectorRuntime runtime;

    public StepLoopLiveness(ConnectorRuntime runtime) {
        this.runtime = runtime;
    }

    @Override
    public HealthCheckResponse call() {
        return check(Stream.of(runtime.producerLoop(), runtime.consumerLoop()).flatMap(Optional::stream).toList(),
                runtime.settings().loop().stallThreshold());
    }

    /** The check of {@code loops}: down, naming the loop, if one stopped or stalled past {@code stallThreshold}. */
    static HealthCheckResponse check(List<StepLoop> loops, Duration stallThreshold) {
        long stallMs = stallThreshold.toMillis();
        HealthCheckResponseBuilder b = HealthCheckResponse.named("step-loops").up();
        for (StepLoop loop : loops) {
            long sinceMs = loop.nanosSinceLastTurn() / 1_000_000;
            b.withData(loop.name() + ".ms-since-last-step", sinceMs);
            if (!loop.turning()) {
                b.down().withData("failed", loop.failure()
                        .map(t -> loop.name() + " stopped: " + t.getClass().getSimpleName() + ": " + t.getMessage())
                        .orElse(loop.name() + " has stopped"));
            } else if (sinceMs > stallMs) {
                b.down().withData("failed", loop.name() + " has not finished a step for " + sinceMs + " ms");
            }
        }
        return b.build();
    }
}
