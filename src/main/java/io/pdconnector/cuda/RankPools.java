package io.pdconnector.cuda;

import io.pdconnector.transfer.DeviceMemory;
import io.pdconnector.transfer.DevicePool;
import io.pdconnector.transfer.KvPools;
import java.security.SecureRandom;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * The ranks' KV pools under {@code pd.kv.memory=vram}: rank {@code r}'s pool on the GPU
 * {@code pd.kv.gpu-uuid} names for it, found by UUID, in its primary context. Each pool opened here is
 * a {@link RankPool} that owns its GPU's context retain and its {@link VramPool}; the rank that asked owns
 * the {@link RankPool}. The driver is loaded on the first open (the start-up self-test has loaded it
 * already, so this finds it loaded).
 */
public final class RankPools implements KvPools {

    private static final SecureRandom INCARNATIONS = new SecureRandom();

    private final Supplier<CudaDriver> load;
    private final List<GpuSelector> gpus;
    private CudaDriver driver;

    public RankPools(Supplier<CudaDriver> load, List<GpuSelector> gpus) {
        this.load = Objects.requireNonNull(load, "load");
        this.gpus = List.copyOf(gpus);
    }

    /** On the rank's step loop; a failure leaves nothing held (the GPU's context given back). */
    @Override
    public DevicePool open(DeviceMemory agent, int rank, String label, long bytes) {
        if (rank < 0 || rank >= gpus.size()) {
            throw new IllegalArgumentException("rank " + rank + " has no GPU: pd.kv.gpu-uuid lists " + gpus.size());
        }
        CudaDevice device = CudaDevice.open(driver(), gpus.get(rank));
        try {
            return new RankPool(device, VramPool.create(device, agent, label, bytes), incarnation());
        } catch (RuntimeException e) {
            try {
                device.close();
            } catch (RuntimeException undo) {
                e.addSuppressed(undo);
            }
            throw e;
        }
    }

    private synchronized CudaDriver driver() {
        if (driver == null) {
            driver = load.get();
        }
        return driver;
    }

    /** New for every pool made; below 2^53 so JSON readers that parse numbers as doubles keep it exact. */
    private static long incarnation() {
        long n;
        do {
            n = INCARNATIONS.nextLong() & ((1L << 53) - 1);
        } while (n == 0);
        return n;
    }
}
