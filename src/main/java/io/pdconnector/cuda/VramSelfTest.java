package io.pdconnector.cuda;

import io.pdconnector.transfer.DeviceMemory;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The start-up check of {@code pd.kv.memory=vram}, in the order a cause is cheapest to find: the CUDA
 * driver (libcuda.so.1), the configured GPU list ({@code ranks}, which may refuse the configuration), each
 * rank's GPU by UUID, UCX's GPU transport, then one whole pool lifecycle per
 * GPU with NIXL (allocate the rank's full pool, register it as VRAM with a probe agent, export its IPC
 * handle, deregister, free). The first failure ends it with a {@link VramStartupException} whose message
 * is one sentence naming the cause; everything opened so far is closed first, by its one owner. A check that
 * passed keeps each GPU's primary context retained ({@link ContextHold}) for its caller to release.
 */
public final class VramSelfTest {

    private VramSelfTest() {
    }

    /** What the check needs; {@code probeAgent} is called only once the GPUs and UCX have passed. */
    public record Inputs(Supplier<CudaDriver> driver, Supplier<List<GpuSelector>> ranks, long poolBytes,
            Map<String, String> env, Path ucxModules, Supplier<TransferAgent> probeAgent) {
    }

    /**
     * What a check that passed leaves: one line per step, for the log, and the retain of each GPU's primary
     * context, which the caller holds until its own pools retained the context too. Releasing it here, the
     * last retain of the process, would destroy the context, and the first pool would make it again.
     */
    public record Passed(List<String> lines, ContextHold hold) {
    }

    /** The self-test's retain of each GPU's primary context; {@link #close()} releases them, last first. */
    public static final class ContextHold implements AutoCloseable {
        private final List<CudaDevice> devices;
        private boolean closed;

        private ContextHold(List<CudaDevice> devices) {
            this.devices = List.copyOf(devices);
        }

        @Override
        public synchronized void close() {
            if (!closed) {
                closed = true;
                closeAll(devices, null);
            }
        }
    }

    /** Runs the check; on success the caller owns the returned hold. */
    public static Passed run(Inputs in) {
        List<String> passed = new ArrayList<>();
        CudaDriver driver;
        try {
            driver = in.driver().get();
        } catch (CudaUnavailableException e) {
            throw new VramStartupException(e.getMessage(), e);
        } catch (CudaException e) {
            throw new VramStartupException("pd.kv.memory=vram: the CUDA driver did not initialise (" + e.getMessage()
                    + "): no usable GPU is given to this container", e);
        }
        passed.add("CUDA driver " + version(driver.driverVersion()));
        List<GpuSelector> ranks = in.ranks().get();
        List<CudaDevice> devices = new ArrayList<>();
        try {
            for (int rank = 0; rank < ranks.size(); rank++) {
                CudaDevice device = open(driver, ranks.get(rank));
                devices.add(device);
                passed.add("rank " + rank + ": " + device);
            }
            Optional<String> ucx = UcxGpuTransport.problem(in.env(), in.ucxModules());
            if (ucx.isPresent()) {
                throw new VramStartupException("pd.kv.memory=vram: UCX offers no GPU transport: " + ucx.get()
                        + "; VRAM would move over a host path (TCP or host-staged copies), so pd-connector refuses "
                        + "to start instead");
            }
            passed.add("UCX: cuda_ipc allowed, CUDA transport module present");
            try (TransferAgent agent = in.probeAgent().get()) {
                if (!(agent instanceof DeviceMemory nixl)) {
                    throw new VramStartupException("pd.kv.memory=vram: transfer agents of this engine ("
                            + agent.getClass().getSimpleName() + ") cannot register VRAM; pd.kv.memory=vram needs "
                            + "pd.transfer.engine=nixl without fault injection");
                }
                for (int rank = 0; rank < devices.size(); rank++) {
                    passed.add("rank " + rank + ": " + lifecycle(devices.get(rank), nixl, rank, in.poolBytes()));
                }
            }
        } catch (RuntimeException e) {
            closeAll(devices, e);
            throw e;
        } catch (Error e) {
            try {
                closeAll(devices, null);
            } catch (RuntimeException undo) {
                e.addSuppressed(undo);
            }
            throw e;
        }
        return new Passed(List.copyOf(passed), new ContextHold(devices));
    }

    private static CudaDevice open(CudaDriver driver, GpuSelector selector) {
        try {
            return CudaDevice.open(driver, selector);
        } catch (GpuNotFoundException e) {
            throw new VramStartupException(e.getMessage(), e);
        }
    }

    /** One pool's whole life: what the service will do per rank once its ranks are wired (docs/gpu.md). */
    private static String lifecycle(CudaDevice device, DeviceMemory nixl, int rank, long bytes) {
        VramPool pool;
        try {
            pool = VramPool.create(device, nixl, "vram-selftest-r" + rank, bytes);
        } catch (TransferException e) {
            throw new VramStartupException("pd.kv.memory=vram: NIXL refused to register " + bytes + " bytes on GPU "
                    + device.uuid() + " as VRAM (" + e.getMessage() + "): its UCX does not see device memory there; "
                    + "the NIXL log line before this one says why", e);
        } catch (CudaException.OutOfMemory e) {
            throw new VramStartupException("pd.kv.memory=vram: GPU " + device.uuid() + " has no " + bytes
                    + " bytes free for rank " + rank + "'s KV pool (" + e.getMessage() + "); lower pd.kv.num-blocks "
                    + "or vLLM's --gpu-memory-utilization", e);
        } catch (CudaException e) {
            throw new VramStartupException("pd.kv.memory=vram: the KV pool of rank " + rank + " on GPU "
                    + device.uuid() + " could not be made (" + e.getMessage() + ")", e);
        }
        String made = pool.toString();
        pool.close();
        return made + ": allocated, registered as VRAM, IPC handle exported, deregistered, freed";
    }

    /** Closes every device, last opened first; a failure is thrown, or added to the one already thrown. */
    private static void closeAll(List<CudaDevice> devices, RuntimeException failure) {
        RuntimeException first = failure;
        for (CudaDevice d : devices.reversed()) {
            try {
                d.close();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null && failure == null) {
            throw first;
        }
    }

    private static String version(int v) {
        return (v / 1000) + "." + (v % 1000 / 10);
    }
}
