package io.pdconnector.runtime;

import io.pdconnector.config.FaultsConfig;
import io.pdconnector.config.PdConfig;
import io.pdconnector.nixl.NixlHome;
import io.pdconnector.nixl.NixlTransferEngine;
import io.pdconnector.nixl.UcxThreads;
import io.pdconnector.transfer.TransferEngine;
import io.pdconnector.transfer.faults.FaultInjectingEngine;
import io.pdconnector.transfer.faults.FaultPlan;
import io.pdconnector.transfer.loopback.LoopbackTransferEngine;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.Disposes;
import jakarta.enterprise.inject.Produces;
import java.nio.file.Path;
import java.util.Locale;
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
        FaultPlan plan;
        try {
            plan = new FaultPlan(FaultPlan.Kind.valueOf(faults.readKind().name().toUpperCase(Locale.ROOT)),
                    faults.rank().map(OptionalInt::of).orElse(OptionalInt.empty()),
                    FaultPlan.Action.valueOf(faults.action().name().toUpperCase(Locale.ROOT)), faults.duration(),
                    faults.probability(), faults.everyNth(), faults.seed());
        } catch (IllegalArgumentException e) {
            engine.close();
            throw e;
        }
        LOG.warnf("FAULT INJECTION ON (pd.faults.enabled): %s", plan);
        return new FaultInjectingEngine(engine, plan);
    }

    /** Opens the engine during start-up, so a missing NIXL stops the service before it reports ready. */
    void openAtStartup(@Observes StartupEvent event, TransferEngine engine) {
        engine.kind();
    }

    void close(@Disposes TransferEngine engine) {
        engine.close();
    }
}
