package io.pdconnector.transfer;

/**
 * Opens a rank's {@link DevicePool} under {@code pd.kv.memory=vram}; the {@code runtime} package supplies
 * the CUDA one. Called on the rank's step loop with that rank's agent, so the pool is registered by the
 * agent that will READ from or serve it (agents are confined to their loop). A failure leaves nothing held.
 */
@FunctionalInterface
public interface KvPools {

    DevicePool open(DeviceMemory agent, int rank, String label, long bytes);
}
