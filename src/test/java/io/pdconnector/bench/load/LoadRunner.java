package io.pdconnector.bench.load;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A closed loop of {@code concurrency} clients, each sending its next request as soon as the last one
 * finished, until {@code count} requests were sent or the time bound passed (requests in flight then
 * finish: each HTTP call has its own deadline).
 */
public final class LoadRunner {

    private final long runStartNanos;

    /** {@code runStartNanos}: the origin of the finish times recorded. */
    public LoadRunner(long runStartNanos) {
        this.runStartNanos = runStartNanos;
    }

    /**
     * Sends requests {@code first .. first + count - 1} of {@code workload}; records them in
     * {@code stats} (null: warm-up, not recorded); returns the requests finished.
     */
    public int run(LoadClient client, Workload workload, int first, int count, int concurrency, long maxNanos,
            long httpTimeoutNanos, RowStats stats, Progress progress) throws Exception {
        AtomicInteger next = new AtomicInteger();
        AtomicInteger finished = new AtomicInteger();
        long start = System.nanoTime();
        long end = start + maxNanos;
        ExecutorService pool = Executors.newFixedThreadPool(concurrency,
                Thread.ofPlatform().daemon().name("client-", 0).factory());
        try {
            List<Future<?>> clients = new ArrayList<>();
            for (int t = 0; t < concurrency; t++) {
                clients.add(pool.submit(() -> {
                    for (int i; System.nanoTime() < end && (i = next.getAndIncrement()) < count;) {
                        LoadClient.Result r = client.run(workload.request(first + i));
                        if (stats != null) {
                            stats.record(r, System.nanoTime() - runStartNanos);
                        }
                        finished.incrementAndGet();
                        progress.tick();
                        if (Thread.currentThread().isInterrupted()) {
                            return null;
                        }
                    }
                    return null;
                }));
            }
            // a request makes at most 4 calls (prefill, pull, and two releases), each within its deadline
            long wait = maxNanos + 4 * httpTimeoutNanos + 5_000_000_000L;
            for (Future<?> f : clients) {
                f.get(Math.max(1, start + wait - System.nanoTime()), TimeUnit.NANOSECONDS);
            }
        } finally {
            pool.shutdownNow();
            if (stats != null) {
                stats.addChunk(start - runStartNanos, System.nanoTime() - runStartNanos);
            }
        }
        return finished.get();
    }
}
