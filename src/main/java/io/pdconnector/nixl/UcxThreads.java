package io.pdconnector.nixl;

/**
 * UCX backend threads of an agent (NIXL's {@code num_threads}) and how many descriptors each takes from a
 * READ at a time ({@code split_batch_size}): with threads, one READ's descriptors are copied by several
 * threads at once, which pays only with cores to spare (docs/performance.md, "Block READs against memcpy").
 *
 * @param threads 0 for none (the default), at most {@link #MAX_THREADS}
 * @param splitBatch descriptors per batch; 0 for NIXL's default
 */
public record UcxThreads(int threads, int splitBatch) {

    /** The helper's {@code PDX_MAX_UCX_THREADS}. */
    public static final int MAX_THREADS = 64;
    public static final UcxThreads NONE = new UcxThreads(0, 0);

    public UcxThreads {
        if (threads < 0 || threads > MAX_THREADS) {
            throw new IllegalArgumentException("UCX threads must be in [0, " + MAX_THREADS + "], got " + threads);
        }
        if (splitBatch < 0) {
            throw new IllegalArgumentException("UCX split batch must not be negative, got " + splitBatch);
        }
    }
}
