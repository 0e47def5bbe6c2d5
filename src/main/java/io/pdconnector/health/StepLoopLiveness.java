package io.pdconnector.health;

import io.pdconnector.loop.StepLoop;
import io.pdconnector.runtime.ConnectorRuntime;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.List;
import java.util.Optional;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;
import org.eclipse.microprofile.health.Liveness;

/**
 * Live while every step loop of this instance is turning. A loop whose thread died, or that has not
 * finished a step for {@code pd.loop.stall-threshold} (a step never blocks, so that means it is stuck),
 * makes the pod restartable; the check names the loop.
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
        long stallMs = runtime.settings().loop().stallThreshold().toMillis();
        HealthCheckResponseBuilder b = HealthCheckResponse.named("step-loops").up();
        for (Optional<StepLoop> maybe : List.of(runtime.producerLoop(), runtime.consumerLoop())) {
            maybe.ifPresent(loop -> {
                long sinceMs = loop.nanosSinceLastTurn() / 1_000_000;
                b.withData(loop.name() + ".ms-since-last-step", sinceMs);
                if (!loop.turning()) {
                    b.down().withData("failed", loop.name() + " has stopped");
                } else if (sinceMs > stallMs) {
                    b.down().withData("failed", loop.name() + " has not finished a step for " + sinceMs + " ms");
                }
            });
        }
        return b.build();
    }
}
