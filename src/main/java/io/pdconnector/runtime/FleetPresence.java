package io.pdconnector.runtime;

import io.pdconnector.consumer.ConsumerFacade;
import io.pdconnector.controlplane.InstanceRecord;
import io.pdconnector.controlplane.Registry;
import io.pdconnector.error.PdException;
import io.pdconnector.loop.LoopGauges;
import io.pdconnector.protocol.ProducerIncarnation;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.jboss.logging.Logger;

/**
 * Ties this instance's loops to the registry: D's loop hears of every producer as it is announced
 * (so it handshakes before any pull needs it), and this instance's capacity is republished on
 * change, at most once per pd.registry.publish-min-interval.
 */
final class FleetPresence implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(FleetPresence.class);

    private final Registry registry;
    private final ScheduledExecutorService publisher = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "pd-registry-publisher");
        t.setDaemon(true);
        return t;
    });

    FleetPresence(Registry registry) {
        this.registry = registry;
    }

    void start(Optional<ConsumerFacade> consumer, Optional<LoopGauges> producerGauges, Duration interval) {
        consumer.ifPresent(this::announceTo);
        publisher.scheduleWithFixedDelay(() -> publish(producerGauges), 0, interval.toMillis(), TimeUnit.MILLISECONDS);
    }

    private void announceTo(ConsumerFacade consumer) {
        registry.subscribe(new Registry.ProducerListener() {
            @Override
            public void announced(ProducerIncarnation incarnation) {
                submit(() -> consumer.submitAnnounced(incarnation).whenComplete((ok, e) -> {
                    if (e != null) {
                        LOG.warnf("producer %s not loaded ahead of its pulls: %s", incarnation.engineId(),
                                e.getMessage());
                    }
                }), incarnation.engineId());
            }

            @Override
            public void withdrawn(String engineId) {
                submit(() -> consumer.submitWithdrawn(engineId), engineId);
            }
        });
    }

    /** A full queue loses an announcement, never a pull's correctness: a pull checks the registry itself. */
    private static void submit(Runnable submission, String engineId) {
        try {
            submission.run();
        } catch (PdException e) {
            LOG.warnf("registry change of %s not passed to the decoder now: %s", engineId, e.getMessage());
        }
    }

    private void publish(Optional<LoopGauges> gauges) {
        try {
            InstanceRecord.Capacity capacity = gauges.map(g -> new InstanceRecord.Capacity(
                    g.blocksTotal() - g.blocksInUse(), g.slotsTotal() - g.slotsInUse(), g.liveRequests(), g.queued()))
                    .orElse(InstanceRecord.Capacity.UNKNOWN);
            registry.updateCapacity(capacity, true);
        } catch (RuntimeException e) {
            LOG.warnf(e, "publishing this instance's capacity failed");
        }
    }

    @Override
    public void close() {
        publisher.shutdownNow();
    }
}
