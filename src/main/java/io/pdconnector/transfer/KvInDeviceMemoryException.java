package io.pdconnector.transfer;

/**
 * A Java path that reads or writes KV bytes in host memory asked for a rank whose KV is in GPU memory
 * ({@code pd.kv.memory=vram}), which Java cannot reach. Its message is one sentence naming the path.
 */
public final class KvInDeviceMemoryException extends IllegalStateException {

    /** The machine-readable reason an API answer carries for it. */
    public static final String REASON = "kv-in-gpu-memory";

    public KvInDeviceMemoryException(String use) {
        super(use + " reads or writes KV bytes in host memory, but with pd.kv.memory=vram this instance keeps its "
                + "KV in GPU memory, which pd-connector's Java side cannot reach; use an engine with the plugin's "
                + "GPU path, or pd.kv.memory=dram");
    }
}
