package io.pdconnector.health;

import io.pdconnector.config.PdConfig;
import io.pdconnector.controlplane.RegistryStore;
import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.runtime.ConnectorRuntime;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.List;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;
import org.eclipse.microprofile.health.Readiness;

/**
 * Ready when this instance can serve its role: as a producer, its agents are created and published
 * with their lease slots registered on every rank (when verifying); as a consumer, its loop is up;
 * and its own record is written to the registry's store. Each failure is named in the check's data.
 *
 * <p>An unreachable store after that is reported (registry-reachable false) but does not make the
 * instance unready: it keeps serving the fleet it last saw, which is what an etcd outage should
 * cost, rather than every instance leaving its Service at once.
 */
@Readiness
@ApplicationScoped
public class ConnectorReadiness implements HealthCheck {

    private final ConnectorRuntime runtime;

    public ConnectorReadiness(ConnectorRuntime runtime) {
        this.runtime = runtime;
    }

    @Override
    public HealthCheckResponse call() {
        PdConfig config = runtime.config();
        HealthCheckResponseBuilder b = HealthCheckResponse.named("connector").up()
                .withData("role", config.role().name()).withData("engine-id", config.engineId())
                .withData("control-plane", runtime.registry().storeKind());
        RegistryStore.StoreHealth registry = runtime.registry().health();
        b.withData("registry-reachable", registry.reachable()).withData("registry", registry.detail());
        if (!runtime.registry().publishedOnce()) {
            b.down().withData("failed", "this instance's record is not in the registry yet: " + registry.detail());
        }
        if (config.role().producer()) {
            List<HandshakeMetadata> ranks = runtime.registry().self().ranks();
            b.withData("producer-ranks", ranks.size());
            int kvRanks = runtime.producerRanks();
            if (ranks.size() != kvRanks) {
                b.down().withData("failed", "producer published " + ranks.size() + " of " + kvRanks + " ranks");
            } else if (config.lease().verification() && !ranks.stream().allMatch(HandshakeMetadata::hasSlots)) {
                b.down().withData("failed", "lease slots are not registered on every rank");
            }
        }
        if (config.role().consumer() && runtime.consumerLoop().map(l -> !l.turning()).orElse(true)) {
            b.down().withData("failed", "the consumer step loop is not running");
        }
        return b.build();
    }
}
