package io.pdconnector.api.problem;

import io.pdconnector.config.KvMemory;
import io.pdconnector.config.PdConfig;
import io.pdconnector.transfer.KvInDeviceMemoryException;

/**
 * The API's paths that read or write KV bytes in host memory (the reference engine's prefill and decode,
 * uploads, read-outs, checksums, reference checks) are refused under pd.kv.memory=vram before anything
 * reaches a step loop, so a refusal changes no state: no lease, no pull, no block.
 */
public final class HostKv {

    private HostKv() {
    }

    /** Refuses {@code use} when this instance keeps its KV in GPU memory. */
    public static void require(PdConfig config, String use) {
        if (config.kv().memory() == KvMemory.vram) {
            throw refused(new KvInDeviceMemoryException(use));
        }
    }

    /** 409 with the machine-readable reason {@value KvInDeviceMemoryException#REASON} and the one sentence. */
    public static ProblemException refused(KvInDeviceMemoryException e) {
        return new ProblemException(Problem.of(409, KvInDeviceMemoryException.REASON, "KV in GPU memory",
                e.getMessage()));
    }
}
