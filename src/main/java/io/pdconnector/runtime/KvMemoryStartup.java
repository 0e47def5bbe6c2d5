package io.pdconnector.runtime;

import io.pdconnector.config.ConnectorSettings;
import io.pdconnector.config.KvMemory;
import io.pdconnector.config.LoadFailurePolicy;
import io.pdconnector.config.PdConfig;
import io.pdconnector.config.VramHostPath;
import io.pdconnector.cuda.CudaDriver;
import io.pdconnector.cuda.GpuSelector;
import io.pdconnector.cuda.VramSelfTest;
import io.pdconnector.cuda.VramStartupException;
import io.pdconnector.nixl.NixlHome;
import io.pdconnector.transfer.TransferEngine;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.jboss.logging.Logger;

/**
 * {@code pd.kv.memory} at start-up, before the step loops open (a smaller priority value than
 * {@link ConnectorRuntime}'s start, so it is called first). With {@code dram}, the default, it does nothing at all. With
 * {@code vram} it refuses what the VRAM pools cannot serve, runs {@link VramSelfTest} and fails the start with
 * the sentence of the first cause it finds; there is no fallback to DRAM. When every check passed, the
 * step loops make each rank's pool ({@link ConnectorRuntime}, {@code cuda.RankPools}).
 */
@ApplicationScoped
public class KvMemoryStartup {

    /** Before ConnectorRuntime and TransferEngineProducer (default observer priority 2500). */
    static final int PRIORITY = 100;

    private static final Logger LOG = Logger.getLogger(KvMemoryStartup.class);

    /** Held from a passed check until shutdown: the GPUs' contexts live while pools come and go. */
    private VramSelfTest.ContextHold contexts;

    void check(@Observes @Priority(PRIORITY) StartupEvent event, PdConfig config, TransferEngine engine) {
        if (config.kv().memory() == KvMemory.dram) {
            return;
        }
        if (config.role() == PdConfig.Role.router) {
            LOG.info("pd.kv.memory=vram has no effect on a router: it holds no KV");
            return;
        }
        requireOneSideWithoutRecompute(config);
        requireTransportReport(config, System.getenv());
        long poolBytes = config.kv().numBlocks() * ConnectorSettings.geometry(config.model()).blockBytes(config.tpSize());
        Path ucxModules = new NixlHome(Path.of(config.nixl().home()).toAbsolutePath().normalize()).ucxModuleDir();
        VramSelfTest.Passed passed = VramSelfTest.run(new VramSelfTest.Inputs(CudaDriver::load, () -> ranks(config),
                poolBytes, System.getenv(), ucxModules, () -> engine.createAgent(config.engineId() + "-vram-selftest")));
        contexts = passed.hold();
        passed.lines().forEach(line -> LOG.infof("pd.kv.memory=vram check passed: %s", line));
    }

    /** The GPUs' primary contexts stay retained from the check until the service stops (see VramSelfTest.Passed). */
    void release(@Observes ShutdownEvent event) {
        if (contexts != null) {
            contexts.close();
            contexts = null;
        }
    }

    /** What the VRAM pools cannot serve, refused before any GPU is touched. */
    static void requireOneSideWithoutRecompute(PdConfig config) {
        if (config.role() == PdConfig.Role.both) {
            throw new VramStartupException("pd.kv.memory=vram serves one side per instance (each rank's KV is one "
                    + "pool its engine opens): run P and D as separate instances, pd.role=producer or consumer");
        }
        if (config.role().consumer() && config.consumer().failurePolicy() == LoadFailurePolicy.RECOMPUTE) {
            throw new VramStartupException("pd.kv.memory=vram cannot recompute into D's KV: the reference engine "
                    + "writes host memory and the KV is in GPU memory; set pd.consumer.failure-policy=fail");
        }
    }

    /**
     * A decoder that refuses host paths learns each peer's transport from UCX's protocol report, which it can read
     * only if it gave UCX its log file ({@code nixl.UcxProtocolLog}): an environment that sets either UCX setting
     * would leave every transport unknown, so it is refused before any GPU is touched.
     */
    static void requireTransportReport(PdConfig config, Map<String, String> environment) {
        if (!config.role().consumer() || config.kv().vramHostPath() == VramHostPath.allow) {
            return;
        }
        for (String own : List.of("UCX_PROTO_INFO", "UCX_LOG_FILE")) {
            if (environment.containsKey(own)) {
                throw new VramStartupException("pd.kv.memory=vram: a decoder learns which transport reads each"
                        + " peer's GPU memory from UCX's protocol report, which pd-connector sets up itself, and the"
                        + " environment sets " + own + "=" + environment.get(own) + ": unset it, or set"
                        + " pd.kv.vram-host-path=allow to serve READs whatever path they take");
            }
        }
    }

    /** The GPU of each TP rank from pd.kv.gpu-uuid; refuses a missing or mis-sized list before any GPU is touched. */
    static List<GpuSelector> ranks(PdConfig config) {
        if (config.transfer().engine() != PdConfig.TransferKind.nixl) {
            throw new VramStartupException("pd.kv.memory=vram needs pd.transfer.engine=nixl (NIXL registers the pool "
                    + "as VRAM); pd.transfer.engine=" + config.transfer().engine() + " moves host memory only");
        }
        List<String> uuids = config.kv().gpuUuid().orElse(List.of());
        int tp = config.tpSize();
        if (uuids.isEmpty()) {
            throw new VramStartupException("pd.kv.memory=vram needs pd.kv.gpu-uuid: the engine's GPU for each of the "
                    + tp + " TP ranks, by UUID as nvidia-smi -L prints it (or sole-visible with pd.tp-size=1)");
        }
        if (uuids.contains(GpuSelector.SOLE_VISIBLE) && (tp != 1 || uuids.size() != 1)) {
            throw new VramStartupException("pd.kv.gpu-uuid=sole-visible is for pd.tp-size=1 alone (pd.tp-size=" + tp
                    + "): with several ranks, name each rank's GPU by UUID, in rank order");
        }
        if (uuids.size() != tp) {
            throw new VramStartupException("pd.kv.gpu-uuid lists " + uuids.size() + " GPUs, pd.tp-size is " + tp
                    + ": one GPU UUID per TP rank, in rank order");
        }
        if (uuids.stream().distinct().count() != uuids.size()) {
            throw new VramStartupException("pd.kv.gpu-uuid names a GPU twice (" + uuids + "): each TP rank has its own GPU");
        }
        try {
            return uuids.stream().map(GpuSelector::parse).toList();
        } catch (IllegalArgumentException e) {
            throw new VramStartupException("pd.kv.gpu-uuid: " + e.getMessage(), e);
        }
    }
}
