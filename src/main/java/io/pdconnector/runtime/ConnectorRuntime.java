package io.pdconnector.runtime;

import io.pdconnector.config.ConnectorSettings;
import io.pdconnector.config.KvMemory;
import io.pdconnector.config.PdConfig;
import io.pdconnector.consumer.ConsumerFacade;
import io.pdconnector.consumer.PullScheduler;
import io.pdconnector.controlplane.Registry;
import io.pdconnector.cuda.CudaDriver;
import io.pdconnector.cuda.RankPools;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.loop.LoopGauges;
import io.pdconnector.loop.StepLoop;
import io.pdconnector.loop.StepWorker;
import io.pdconnector.metrics.ConnectorMetrics;
import io.pdconnector.producer.LeaseScheduler;
import io.pdconnector.producer.ProducerFacade;
import io.pdconnector.transfer.KvPools;
import io.pdconnector.transfer.PoolShare;
import io.pdconnector.transfer.TransferEngine;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.Optional;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * Starts this instance's step loops for its role (P's lease scheduler, D's pull scheduler) at
 * start-up and stops them at shutdown; a router runs neither, only its registry presence. A loop that cannot open (NIXL, slot registration: L10)
 * fails start-up. The resources reach P and D only through the facades, which await every answer
 * with the configured deadline.
 */
@ApplicationScoped
public class ConnectorRuntime {

    private static final Logger LOG = Logger.getLogger(ConnectorRuntime.class);

    private final PdConfig config;
    private final ConnectorSettings settings;
    private final TransferEngine engine;
    private final ConnectorMetrics metrics;
    private final Registry registry;
    private final FleetPresence presence;
    private LeaseScheduler leaseScheduler;
    private PullScheduler pullScheduler;
    private StepLoop producerLoop;
    private StepLoop consumerLoop;
    private ProducerFacade producer;
    private ConsumerFacade consumer;

    public ConnectorRuntime(PdConfig config, TransferEngine engine, ConnectorMetrics metrics, Registry registry,
            @ConfigProperty(name = "quarkus.http.port", defaultValue = "8080") int httpPort) {
        this.metrics = metrics;
        this.registry = registry;
        this.presence = new FleetPresence(registry);
        this.config = config;
        this.settings = ConnectorSettings.from(config, httpPort);
        this.engine = engine;
    }

    void start(@Observes StartupEvent event) {
        Duration deadline = config.http().requestDeadline();
        registry.start();
        metrics.bindRegistry(registry);
        Optional<KvPools> pools = kvPools();
        if (config.role().producer()) {
            leaseScheduler = new LeaseScheduler(settings.producer(), engine, registry, InstantSource.system(), metrics,
                    pools);
            metrics.bindProducer(leaseScheduler.counters(), leaseScheduler.gauges());
            producerLoop = start(leaseScheduler, settings.loop().producerIdlePark());
            producer = new ProducerFacade(leaseScheduler, deadline);
        }
        if (config.role().consumer()) {
            pullScheduler = new PullScheduler(settings.consumer(), engine, registry, InstantSource.system(), metrics,
                    pools);
            metrics.bindConsumer(pullScheduler.counters(), pullScheduler.gauges());
            consumerLoop = start(pullScheduler, settings.loop().maxIdlePark());
            consumer = new ConsumerFacade(pullScheduler, deadline);
        }
        // A decoder publishes its own occupancy too, so a router can pick the least loaded one.
        Optional<LoopGauges> gauges = leaseScheduler != null ? Optional.of(leaseScheduler.gauges())
                : Optional.ofNullable(pullScheduler).map(PullScheduler::gauges);
        presence.start(Optional.ofNullable(consumer), gauges, config.registry().publishMinInterval());
        LOG.infof("pd-connector %s started as %s (tp %d, %s transfers, lease verification %s, %s registry, epoch %s)",
                config.engineId(), config.role(), config.tpSize(), engine.kind(),
                config.lease().verification() ? "on" : "off", registry.storeKind(), registry.self().epoch());
    }

    void stop(@Observes ShutdownEvent event) {
        Duration deadline = settings.loop().stopDeadline();
        presence.close();
        if (consumerLoop != null) {
            consumerLoop.stop(deadline);
        }
        if (producerLoop != null) {
            producerLoop.stop(deadline);
        }
    }

    /** Under pd.kv.memory=vram, each rank's KV in a pool on its GPU; the start-up checks have passed by now. */
    private Optional<KvPools> kvPools() {
        if (config.kv().memory() != KvMemory.vram || config.role() == PdConfig.Role.router) {
            return Optional.empty();
        }
        return Optional.of(new RankPools(CudaDriver::load, KvMemoryStartup.ranks(config)));
    }

    /** The ranks' VRAM pools as the engine's plugin opens them (one side per instance under vram); else empty. */
    public List<PoolShare> poolShares() {
        if (leaseScheduler != null) {
            return leaseScheduler.poolShares();
        }
        return pullScheduler == null ? List.of() : pullScheduler.poolShares();
    }

    public PdConfig config() {
        return config;
    }

    public Registry registry() {
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

    /** The settings this instance runs with, mapped from {@link #config()} once. */
    public ConnectorSettings settings() {
        return settings;
    }

    public ModelGeometry geometry() {
        return settings.geometry();
    }

    /** The ranks a producer publishes: every TP rank, or MLA's one ({@code ModelGeometry#kvRanks}). */
    public int producerRanks() {
        return settings.producer().tpSize();
    }

    private StepLoop start(StepWorker worker, Duration idlePark) {
        return StepLoop.start(worker, settings.loop().openDeadline(), idlePark);
    }
}
