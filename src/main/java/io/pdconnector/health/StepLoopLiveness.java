package io.pdconnector.health;

import io.pdconnector.loop.StepLoop;
import io.pdconnector.runtime.ConnectorRuntime;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;
import org.eclipse.microprofile.health.Liveness;

/**
 * Live while every step loop of this instance is turning. A loop whose thread died, or that has not
 * finished a step for {@link #STALL} (a step never blocks, so that means it is stuck), makes the pod
 * restartable; the check names the loop.
 */
@Liveness
@ApplicationScoped
public class StepLoopLiveness implements HealthCheck {

    static final Duration STALL = Duration.ofSeconds(10);

    private final ConnectorRuntime runtime;

    public StepLoopLiveness(ConnectorRuntime runtime) {
        this.runtime = runtime;
    }

    @Override
    public HealthCheckResponse call() {
        HealthCheckResponseBuilder b = HealthCheckResponse.named("step-loops").up();
        for (Optional<StepLoop> maybe : List.of(runtime.producerLoop(), runtime.consumerLoop())) {
            maybe.ifPresent(loop -> {
                long sinceMs = loop.nanosSinceLastTurn() / 1_000_000;
                b.withData(loop.name() + ".ms-since-last-step", sinceMs);
                if (!loop.turning()) {
                    b.down().withData("failed", loop.name() + " has stopped");
                } else if (sinceMs > STALL.toMillis()) {
                    b.down().withData("failed", loop.name() + " has not finished a step for " + sinceMs + " ms");
                }
            });
        }
        return b.build();
    }
}
