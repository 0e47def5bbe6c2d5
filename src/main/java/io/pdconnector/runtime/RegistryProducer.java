package io.pdconnector.runtime;

import io.pdconnector.config.AuthRole;
import io.pdconnector.config.ClientTokens;
import io.pdconnector.config.ConnectorSettings;
import io.pdconnector.config.PdConfig;
import io.pdconnector.config.RegistryConfig;
import io.pdconnector.config.ProducerConfig;
import io.pdconnector.controlplane.EmbeddedStore;
import io.pdconnector.controlplane.EtcdSettings;
import io.pdconnector.controlplane.EtcdStore;
import io.pdconnector.controlplane.InstanceRecord;
import io.pdconnector.controlplane.RecordCodec;
import io.pdconnector.controlplane.Registry;
import io.pdconnector.controlplane.RegistryCounters;
import io.pdconnector.controlplane.RegistryStore;
import io.pdconnector.controlplane.StaticStore;
import io.pdconnector.protocol.HandshakeMetadata;
import jakarta.enterprise.inject.Disposes;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;
import java.time.InstantSource;
import java.util.List;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * The one registry of this instance, on the store {@code pd.registry.store} names, with this
 * start's record: a fresh epoch, the advertised address, no ranks until P's loop opens.
 */
public class RegistryProducer {

    @Produces
    @Singleton
    Registry registry(PdConfig config, @ConfigProperty(name = "quarkus.http.port", defaultValue = "8080") int httpPort) {
        ProducerConfig identity = ConnectorSettings.from(config, httpPort).producer();
        RegistryCounters counters = new RegistryCounters();
        InstanceRecord first = new InstanceRecord(config.engineId(), config.role().name(), identity.host(),
                identity.port(), config.tpSize(), UUID.randomUUID().toString(),
                HandshakeMetadata.CONNECTOR_VERSION, identity.geometry().compatHash(HandshakeMetadata.CONNECTOR_VERSION),
                List.of(), InstanceRecord.Capacity.UNKNOWN, false, System.currentTimeMillis());
        return new Registry(store(config, counters), first, config.registry().publishMinInterval(), counters,
                InstantSource.system());
    }

    void close(@Disposes Registry registry) {
        registry.close();
    }

    private static RegistryStore store(PdConfig pd, RegistryCounters counters) {
        RegistryConfig config = pd.registry();
        RecordCodec codec = new RecordCodec();
        return switch (config.store()) {
            case "embedded" -> new EmbeddedStore(counters);
            case "static" -> new StaticStore(config.fixed().peers().orElse(List.of()), config.fixed().refreshInterval(),
                    config.fixed().fetchTimeout(), codec, counters,
                    ClientTokens.from(pd.auth()).authorization(AuthRole.peer));
            case "etcd" -> new EtcdStore(EtcdSettings.from(config.etcd()), codec, counters);
            default -> throw new IllegalArgumentException("pd.registry.store=" + config.store()
                    + " is not a store this build has (embedded, static, etcd)");
        };
    }
}
