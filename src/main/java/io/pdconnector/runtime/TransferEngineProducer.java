package io.pdconnector.runtime;

import io.pdconnector.config.FaultsConfig;
import io.pdconnector.config.PdConfig;
import io.pdconnector.nixl.NixlHome;
import io.pdconnector.nixl.NixlTransferEngine;
import io.pdconnector.nixl.UcxThreads;
import io.pdconnector.transfer.TransferEngine;
import io.pdconnector.transfer.faults.FaultInjectingEngine;
import io.pdconnector.transfer.faults.FaultPlan;
import io.pdconnector.transfer.faults.NotificationFaultPlan;
import io.pdconnector.transfer.loopback.LoopbackTransferEngine;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.Disposes;
import jakarta.enterprise.inject.Produces;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalInt;
import org.jboss.logging.Logger;

/** Opens the configured transfer engine once; a missing NIXL fails start-up, it is never replaced silently. */
@ApplicationScoped
public class TransferEngineProducer {

    private static final Logger LOG = Logger.getLogger(TransferEngineProducer.class);

    @Produces
    @ApplicationScoped
    TransferEngine transferEngine(PdConfig config) {
        if (config.role() == PdConfig.Role.router) {
            return new NoTransferEngine(); // a router moves no KV: it must start where NIXL is not installed
        }
        TransferEngine engine = switch (config.transfer().engine()) {
            case nixl -> NixlTransferEngine.open(NixlHome.at(Path.of(config.nixl().home())),
                    config.nixl().progressThread(), config.nixl().progressDelayUs(),
                    new UcxThreads(config.nixl().ucxThreads(), config.nixl().ucxSplitBatch()));
            case loopback -> new LoopbackTransferEngine();
        };
        LOG.infof("transfer engine %s ready", engine.kind());
        return config.faults().enabled() ? withFaults(engine, config.faults()) : engine;
    }

    private static TransferEngine withFaults(TransferEngine engine, FaultsConfig faults) {
        FaultInjectingEngine wrapped;
        try {
            wrapped = new FaultInjectingEngine(engine, readPlan(faults), notificationPlan(faults.notifications()),
                    faults.seed());
        } catch (IllegalArgumentException e) {
            engine.close();
            throw e;
        }
        LOG.warnf("FAULT INJECTION ON (pd.faults.enabled): READs: %s; notifications: %s",
                wrapped.readPlan().map(Object::toString).orElse("none"),
                wrapped.notificationPlan().map(Object::toString).orElse("none"));
        return wrapped;
    }

    /** The READ plan {@code pd.faults.*} gives; empty for {@code read-kind=none}. Bad values throw, naming the key. */
    static Optional<FaultPlan> readPlan(FaultsConfig faults) {
        if (faults.readKind() == FaultsConfig.ReadKind.none) {
            return Optional.empty();
        }
        return Optional.of(new FaultPlan(FaultPlan.Kind.valueOf(faults.readKind().name().toUpperCase(Locale.ROOT)),
                faults.rank().map(OptionalInt::of).orElse(OptionalInt.empty()),
                FaultPlan.Action.valueOf(faults.action().name().toUpperCase(Locale.ROOT)), faults.duration(),
                faults.probability(), faults.everyNth(), faults.seed()));
    }

    /** The plan {@code pd.faults.notifications.*} gives; empty for {@code kind=none}. */
    static Optional<NotificationFaultPlan> notificationPlan(FaultsConfig.Notifications n) {
        if (n.kind() == FaultsConfig.NotificationKind.none) {
            return Optional.empty();
        }
        return Optional.of(new NotificationFaultPlan(
                NotificationFaultPlan.Kind.valueOf(n.kind().name().toUpperCase(Locale.ROOT)),
                n.actions().stream().map(a -> NotificationFaultPlan.Action.valueOf(a.name().toUpperCase(Locale.ROOT)))
                        .toList(),
                n.delay(), n.probability(), n.everyNth()));
    }

    /** Opens the engine during start-up, so a missing NIXL stops the service before it reports ready. */
    void openAtStartup(@Observes StartupEvent event, TransferEngine engine) {
        engine.kind();
    }

    void close(@Disposes TransferEngine engine) {
        engine.close();
    }
}
