package io.pdconnector.nixl;

import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferEngine;

/**
 * Real NIXL, through libnixl_capi and the project's helper.
 *
 * <p>NIXL's progress thread is on by default and is the one thread this layer lets native code
 * run: on a host without RDMA, UCX emulates a READ of ordinary memory with messages that the
 * exporting side must progress, so a P instance whose agent had no progress thread would only serve
 * READs while its step loop happened to be inside NIXL. With it off, the owner must poll.
 */
public final class NixlTransferEngine implements TransferEngine {

    private final HelperBindings bindings;
    private final boolean progressThread;
    private final long progressDelayMicros;

    private NixlTransferEngine(HelperBindings bindings, boolean progressThread, long progressDelayMicros) {
        this.bindings = bindings;
        this.progressThread = progressThread;
        this.progressDelayMicros = progressDelayMicros;
    }

    /** Loads NIXL from {@code home}; throws {@link NixlUnavailableException} if it cannot. */
    public static NixlTransferEngine open(NixlHome home, boolean progressThread, long progressDelayMicros) {
        if (progressDelayMicros < 0) {
            throw new IllegalArgumentException("progress delay must be >= 0 us, got " + progressDelayMicros);
        }
        return new NixlTransferEngine(HelperBindings.load(home), progressThread, progressDelayMicros);
    }

    @Override
    public String kind() {
        return "nixl";
    }

    @Override
    public TransferAgent createAgent(String name) {
        return NixlAgent.create(bindings, name, progressThread, progressDelayMicros);
    }

    @Override
    public void close() {
        // Agents are closed by their owners; the libraries stay loaded for the process (see NativeLoader).
    }
}
