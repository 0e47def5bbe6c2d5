package io.pdconnector.nixl;

import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferEngine;
import java.util.Objects;

/**
 * Real NIXL, through libnixl_capi and the project's helper.
 *
 * <p>NIXL's progress thread is on by default and is the one thread this layer lets native code
 * run: on a host without RDMA, UCX emulates a READ of ordinary memory with messages that the
 * exporting side must progress, so a P instance whose agent had no progress thread would only serve
 * READs while its step loop happened to be inside NIXL. With it off, the owner must poll. UCX's own
 * backend threads ({@code ucxThreads}, NIXL's {@code num_threads}) are off unless configured: they split a
 * large READ among themselves, which pays only with cores to spare.
 */
public final class NixlTransferEngine implements TransferEngine {

    private final HelperBindings bindings;
    private final boolean progressThread;
    private final long progressDelayMicros;
    private final UcxThreads ucxThreads;

    private NixlTransferEngine(HelperBindings bindings, boolean progressThread, long progressDelayMicros,
            UcxThreads ucxThreads) {
        this.bindings = bindings;
        this.progressThread = progressThread;
        this.progressDelayMicros = progressDelayMicros;
        this.ucxThreads = ucxThreads;
    }

    /** Loads NIXL from {@code home}, no UCX backend threads; throws {@link NixlUnavailableException} if it cannot. */
    public static NixlTransferEngine open(NixlHome home, boolean progressThread, long progressDelayMicros) {
        return open(home, progressThread, progressDelayMicros, UcxThreads.NONE);
    }

    /** Loads NIXL from {@code home}, its agents' UCX backends with {@code ucxThreads}. */
    public static NixlTransferEngine open(NixlHome home, boolean progressThread, long progressDelayMicros,
            UcxThreads ucxThreads) {
        if (progressDelayMicros < 0) {
            throw new IllegalArgumentException("progress delay must be >= 0 us, got " + progressDelayMicros);
        }
        Objects.requireNonNull(ucxThreads, "ucxThreads");
        return new NixlTransferEngine(HelperBindings.load(home), progressThread, progressDelayMicros, ucxThreads);
    }

    @Override
    public String kind() {
        return "nixl";
    }

    @Override
    public TransferAgent createAgent(String name) {
        return NixlAgent.create(bindings, name, progressThread, progressDelayMicros, ucxThreads);
    }

    @Override
    public void close() {
        // Agents are closed by their owners; the libraries stay loaded for the process (see NativeLoader).
    }
}
