package io.pdconnector.health;

import io.pdconnector.transfer.TransferEngine;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/** Ready only once the configured transfer engine (real NIXL by default) is loaded. */
@Readiness
@ApplicationScoped
public class TransferEngineReadiness implements HealthCheck {

    private final TransferEngine engine;

    public TransferEngineReadiness(TransferEngine engine) {
        this.engine = engine;
    }

    @Override
    public HealthCheckResponse call() {
        return HealthCheckResponse.named("transfer-engine").up().withData("kind", engine.kind()).build();
    }
}
