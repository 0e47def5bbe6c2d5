package io.pdconnector.bench.load;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;

/**
 * A closed loop of {@code concurrency} clients, each sending its next request as soon as the last one
 * finished, until {@code count} requests were sent or the time bound passed (requests in flight then
 * finish: each HTTP call has its own deadline).
 *
 * <p>Inline (the default), a client's request is its prefill, pull and release in a row, and the
 * row's measured time is the loop's wall time. Ahead ({@code --prefill ahead}), requests go in
 * batches of twice the concurrency: the batch is prefilled first (that many in flight, not timed
 * for the rate), then pulled and released (timed): the rate is then pulls per second with exactly
 * {@code concurrency} pulls in flight, which P's prefill cannot hold back.
 */
public final class LoadRunner {

    /** A request makes at most 5 calls (prefill, pull, two releases, an abort), each within its deadline. */
    private static final int CALLS = 5;

    private final long runStartNanos;
    private final boolean ahead;

    /** {@code runStartNanos}: the origin of the finish times recorded. */
    public LoadRunner(long runStartNanos, boolean ahead) {
        this.runStartNanos = runStartNanos;
        this.ahead = ahead;
    }

    /**
     * Sends requests {@code first .. first + count - 1} of {@code workload}; records them in
     * {@code stats} (null: warm-up, not recorded); returns the requests finished.
     */
    public int run(LoadClient client, Workload workload, int first, int count, int concurrency, long maxNanos,
            long httpTimeoutNanos, RowStats stats, Progress progress) throws Exception {
        long start = System.nanoTime();
        long end = start + maxNanos;
        AtomicInteger finished = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(concurrency,
                Thread.ofPlatform().daemon().name("client-", 0).factory());
        long measured = 0;
        try {
            if (!ahead) {
                parallel(pool, concurrency, count, end, maxNanos + CALLS * httpTimeoutNanos, i -> {
                    record(stats, client.run(workload.request(first + i)));
                    finished.incrementAndGet();
                    progress.tick();
                });
                measured = System.nanoTime() - start;
            } else {
                int batch = 2 * concurrency; // so each client takes at most 2 of a batch
                long bound = 2 * CALLS * httpTimeoutNanos;
                for (int sent = 0; sent < count && System.nanoTime() < end; sent += batch) {
                    int from = sent;
                    int n = Math.min(batch, count - sent);
                    LoadClient.Prefilled[] prefilled = new LoadClient.Prefilled[n];
                    parallel(pool, concurrency, n, Long.MAX_VALUE, bound,
                            i -> prefilled[i] = client.prefill(workload.request(first + from + i)));
                    long t0 = System.nanoTime();
                    parallel(pool, concurrency, n, Long.MAX_VALUE, bound, i -> {
                        LoadClient.Prefilled p = prefilled[i];
                        record(stats, p.failed() != null ? p.failed() : client.finish(p));
                        finished.incrementAndGet();
                        progress.tick();
                    });
                    measured += System.nanoTime() - t0;
                }
            }
        } finally {
            pool.shutdownNow();
            if (stats != null) {
                stats.addChunk(start - runStartNanos, System.nanoTime() - runStartNanos, measured);
            }
        }
        return finished.get();
    }

    private void record(RowStats stats, LoadClient.Result r) {
        if (stats != null) {
            stats.record(r, System.nanoTime() - runStartNanos);
        }
    }

    /**
     * Runs {@code task(0 .. count - 1)} on {@code concurrency} clients, none started after {@code end};
     * waits at most {@code boundNanos} (and 5 s more) for them.
     */
    private static void parallel(ExecutorService pool, int concurrency, int count, long end, long boundNanos,
            IntConsumer task) throws Exception {
        AtomicInteger next = new AtomicInteger();
        long start = System.nanoTime();
        List<Future<?>> clients = new ArrayList<>();
        for (int t = 0; t < Math.min(concurrency, count); t++) {
            clients.add(pool.submit(() -> {
                for (int i; System.nanoTime() < end && (i = next.getAndIncrement()) < count;) {
                    task.accept(i);
                    if (Thread.currentThread().isInterrupted()) {
                        return null;
                    }
                }
                return null;
            }));
        }
        long deadline = start + boundNanos + 5_000_000_000L;
        for (Future<?> f : clients) {
            f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        }
    }
}
