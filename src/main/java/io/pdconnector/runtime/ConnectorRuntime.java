package io.pdconnector.runtime;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.config.PdConfig;
import io.pdconnector.config.ProducerConfig;
import io.pdconnector.consumer.ConsumerFacade;
import io.pdconnector.consumer.PullScheduler;
import io.pdconnector.controlplane.EmbeddedRegistry;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.loop.StepLoop;
import io.pdconnector.metrics.ConnectorMetrics;
import io.pdconnector.producer.LeaseScheduler;
import io.pdconnector.producer.ProducerFacade;
import io.pdconnector.transfer.TransferEngine;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.nio.file.Path;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Optional;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * Starts this instance's step loops for its role (P's lease scheduler, D's pull scheduler) at
 * start-up and stops them at shutdown. A loop that cannot open (NIXL, slot registration: L10)
 * fails start-up. The resources reach P and D only through the facades, which await every answer
 * with the configured deadline.
 */
@ApplicationScoped
public class ConnectorRuntime {

    private static final Logger LOG = Logger.getLogger(ConnectorRuntime.class);
    private static final Duration OPEN_DEADLINE = Duration.ofSeconds(60);

    private final PdConfig config;
    private final TransferEngine engine;
    private final int httpPort;
    private final ConnectorMetrics metrics;
    private final EmbeddedRegistry registry;
    private LeaseScheduler leaseScheduler;
    private PullScheduler pullScheduler;
    private StepLoop producerLoop;
    private StepLoop consumerLoop;
    private ProducerFacade producer;
    private ConsumerFacade consumer;

    public ConnectorRuntime(PdConfig config, TransferEngine engine, ConnectorMetrics metrics, EmbeddedRegistry registry,
            @ConfigProperty(name = "quarkus.http.port", defaultValue = "8080") int httpPort) {
        this.metrics = metrics;
        this.registry = registry;
        this.config = config;
        this.engine = engine;
        this.httpPort = httpPort;
    }

    void start(@Observes StartupEvent event) {
        Duration deadline = config.http().requestDeadline();
        if (config.role().producer()) {
            leaseScheduler = new LeaseScheduler(producerConfig(), engine, registry, InstantSource.system(), metrics);
            metrics.bindProducer(leaseScheduler.counters(), leaseScheduler.gauges());
            producerLoop = StepLoop.start(leaseScheduler, OPEN_DEADLINE);
            producer = new ProducerFacade(leaseScheduler, deadline);
        }
        if (config.role().consumer()) {
            pullScheduler = new PullScheduler(consumerConfig(), engine, registry, InstantSource.system(), metrics);
            metrics.bindConsumer(pullScheduler.counters(), pullScheduler.gauges());
            consumerLoop = StepLoop.start(pullScheduler, OPEN_DEADLINE);
            consumer = new ConsumerFacade(pullScheduler, deadline);
        }
        LOG.infof("pd-connector %s started as %s (tp %d, %s transfers, lease verification %s)", config.engineId(),
                config.role(), config.tpSize(), engine.kind(), config.lease().verification() ? "on" : "off");
    }

    void stop(@Observes ShutdownEvent event) {
        Duration deadline = Duration.ofSeconds(10);
        if (consumerLoop != null) {
            consumerLoop.stop(deadline);
        }
        if (producerLoop != null) {
            producerLoop.stop(deadline);
        }
    }

    public PdConfig config() {
        return config;
    }

    public EmbeddedRegistry registry() {
        return registry;
    }

    public Optional<ProducerFacade> producer() {
        return Optional.ofNullable(producer);
    }

    public Optional<ConsumerFacade> consumer() {
        return Optional.ofNullable(consumer);
    }

    public Optional<LeaseScheduler> leaseScheduler() {
        return Optional.ofNullable(leaseScheduler);
    }

    public Optional<PullScheduler> pullScheduler() {
        return Optional.ofNullable(pullScheduler);
    }

    public Optional<StepLoop> producerLoop() {
        return Optional.ofNullable(producerLoop);
    }

    public Optional<StepLoop> consumerLoop() {
        return Optional.ofNullable(consumerLoop);
    }

    public ModelGeometry geometry() {
        PdConfig.Model m = config.model();
        return new ModelGeometry(m.layers(), m.kvHeads(), m.headDim(), m.blockTokens(), m.dtypeBytes());
    }

    private ProducerConfig producerConfig() {
        return new ProducerConfig(config.engineId(), config.advertisedHost(), config.advertisedPort().orElse(httpPort),
                config.tpSize(), geometry(), config.kv().numBlocks(), config.kv().maxNumSeqs(), config.lease().slots(),
                config.lease().duration(), config.lease().verification(), Path.of(config.lease().stateDir()),
                config.http().queueCapacity(), Path.of(config.kv().shmDir()), config.lease().reservationTimeout());
    }

    private ConsumerConfig consumerConfig() {
        Duration heartbeat = config.consumer().heartbeatInterval().orElse(config.lease().duration().dividedBy(6));
        return new ConsumerConfig(config.engineId(), config.tpSize(), geometry(), config.kv().numBlocks(),
                config.lease().verification(), config.consumer().failurePolicy(), heartbeat,
                config.consumer().pullTimeout(), config.consumer().slotReadSpins(), 64,
                config.http().queueCapacity());
    }
}
