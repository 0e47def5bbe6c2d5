package io.pdconnector.loop;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs one {@link StepWorker} on its own thread: open, then steps with an idle strategy until
 * closed, then the worker's close. A worker that fails to open fails {@link #start}.
 */
public final class StepLoop implements AutoCloseable {

    /** The default of {@code pd.loop.max-idle-park}, for loops started without one (tests, benches). */
    public static final Duration DEFAULT_MAX_IDLE_PARK = Duration.ofMillis(1);

    /** The default of {@code pd.loop.stop-deadline}, used by {@link #close()} (tests, benches). */
    public static final Duration DEFAULT_STOP_DEADLINE = Duration.ofSeconds(10);

    private final StepWorker worker;
    private final long maxParkNanos;
    private final Thread thread;
    private final CompletableFuture<Void> opened = new CompletableFuture<>();
    private final CompletableFuture<Void> stopped = new CompletableFuture<>();
    private volatile boolean running = true;
    private volatile long lastTurnNanos = System.nanoTime();

    private StepLoop(StepWorker worker, Duration maxIdlePark) {
        if (maxIdlePark.isNegative() || maxIdlePark.isZero()) {
            throw new IllegalArgumentException("maxIdlePark must be positive, got " + maxIdlePark);
        }
        this.worker = worker;
        this.maxParkNanos = maxIdlePark.toNanos();
        this.thread = Thread.ofPlatform().name("step-loop-" + worker.name()).daemon().unstarted(this::run);
    }

    /** Starts the loop and waits, up to {@code deadline}, for the worker to open; idles as by default. */
    public static StepLoop start(StepWorker worker, Duration deadline) {
        return start(worker, deadline, DEFAULT_MAX_IDLE_PARK);
    }

    /**
     * Starts the loop and waits, up to {@code deadline}, for the worker to open. An idle loop parks at
     * most {@code maxIdlePark} at a time ({@link IdleStrategy}).
     */
    public static StepLoop start(StepWorker worker, Duration deadline, Duration maxIdlePark) {
        StepLoop loop = new StepLoop(worker, maxIdlePark);
        loop.thread.start();
        try {
            loop.opened.get(deadline.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException(worker.name() + " failed to start: " + e.getCause().getMessage(),
                    e.getCause());
        } catch (TimeoutException e) {
            loop.running = false;
            throw new IllegalStateException(worker.name() + " did not open within " + deadline);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while starting " + worker.name(), e);
        }
        return loop;
    }

    private void run() {
        try {
            worker.open();
        } catch (RuntimeException | Error e) {
            opened.completeExceptionally(e);
            stopped.complete(null);
            return;
        }
        opened.complete(null);
        IdleStrategy idle = new IdleStrategy(maxParkNanos);
        try {
            while (running) {
                idle.idle(worker.doWork());
                lastTurnNanos = System.nanoTime();
            }
        } catch (RuntimeException | Error e) {
            stopped.completeExceptionally(e);
        } finally {
            try {
                worker.close();
                stopped.complete(null);
            } catch (RuntimeException e) {
                stopped.completeExceptionally(e);
            }
        }
    }

    /** How long since the loop last finished a step: the liveness signal operators watch. */
    public long nanosSinceLastTurn() {
        return System.nanoTime() - lastTurnNanos;
    }

    /** Whether the loop thread is still stepping (false once stopped or after an uncaught failure). */
    public boolean turning() {
        return running && thread.isAlive() && !stopped.isDone();
    }

    public String name() {
        return worker.name();
    }

    /** Stops the loop and waits for the worker to close; rethrows what the loop or close failed with. */
    public void stop(Duration deadline) {
        running = false;
        try {
            stopped.get(deadline.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException(worker.name() + " stopped with an error: " + e.getCause().getMessage(),
                    e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException(worker.name() + " did not stop within " + deadline);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while stopping " + worker.name(), e);
        }
    }

    /** Stops with {@link #DEFAULT_STOP_DEADLINE}. */
    @Override
    public void close() {
        stop(DEFAULT_STOP_DEADLINE);
    }
}
