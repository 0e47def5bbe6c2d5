package io.pdconnector.runtime;

import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferEngine;

/** The router's engine: it creates no agent, so nothing of NIXL is loaded in a router. */
final class NoTransferEngine implements TransferEngine {

    static final String KIND = "none";

    @Override
    public String kind() {
        return KIND;
    }

    @Override
    public TransferAgent createAgent(String name) {
        throw new IllegalStateException("a router moves no KV: no transfer agent " + name);
    }

    @Override
    public void close() {
        // nothing was opened
    }
}
