package io.pdconnector.loop;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.AgentRunner;
import org.agrona.concurrent.AgentTerminationException;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.IdleStrategy;
import org.jboss.logging.Logger;

/**
 * Runs one {@link StepWorker} on its own thread with Agrona's {@link AgentRunner} (the duty cycle
 * Aeron's conductor runs): open, then steps, idling between them as the worker asks, until stopped, then the
 * worker's close, all on that thread. A worker that fails to open fails {@link #start}. A step that
 * throws stops the loop: protocol state may be half-changed, so the loop does not step on it again;
 * the failure is logged, liveness sees {@link #turning} false and {@link #failure} says why, and
 * {@link #stop} rethrows it.
 */
public final class StepLoop implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(StepLoop.class);
    /**
     * Spins and yields before parking, for a worker that {@link StepWorker#spinsWhenIdle spins}: it sees
     * a completion within microseconds when busy. Each spin and yield is a step, so a worker that
     * spins keeps its idle step cheap.
     */
    private static final int IDLE_SPINS = 100;
    private static final int IDLE_YIELDS = 100;
    private static final long MIN_PARK_NANOS = 1_000;

    /**
     * The default of {@code pd.loop.max-idle-park}, for loops started without one (tests, benches): an
     * idle loop sees within it what arrives without a command, at about 1,000 wake-ups a second.
     */
    public static final Duration DEFAULT_MAX_IDLE_PARK = Duration.ofMillis(1);

    /** The default of {@code pd.loop.stop-deadline}, used by {@link #close()} (tests, benches). */
    public static final Duration DEFAULT_STOP_DEADLINE = Duration.ofSeconds(10);

    private final WorkerAgent agent;
    private final AgentRunner runner;

    private StepLoop(StepWorker worker, Duration maxIdlePark) {
        if (maxIdlePark.toNanos() < MIN_PARK_NANOS) {
            throw new IllegalArgumentException("maxIdlePark must be at least 1 us, got " + maxIdlePark);
        }
        this.agent = new WorkerAgent(worker);
        this.runner = new AgentRunner(idleStrategy(worker, maxIdlePark.toNanos()),
                t -> logFailure(worker.name(), t), null, agent);
    }

    /**
     * A worker that spins parks with a doubling pause after its spins and yields, so a completion soon
     * after is seen soon. One that does not spins parks its whole pause from its first idle step, or until
     * its next deadline if that comes first ({@link ParkUntilDue}): what it waits for comes as commands,
     * which wake it, so shorter parks would only be more wake-ups, each a whole step (the measured plugin
     * P woke about 60 times a request with parks doubling from 1 us).
     */
    private static IdleStrategy idleStrategy(StepWorker worker, long parkNanos) {
        return worker.spinsWhenIdle()
                ? new BackoffIdleStrategy(IDLE_SPINS, IDLE_YIELDS, MIN_PARK_NANOS, parkNanos)
                : new ParkUntilDue(worker, parkNanos);
    }

    /** Starts the loop and waits, up to {@code deadline}, for the worker to open; idles as by default. */
    public static StepLoop start(StepWorker worker, Duration deadline) {
        return start(worker, deadline, DEFAULT_MAX_IDLE_PARK);
    }

    /**
     * Starts the loop and waits, up to {@code deadline}, for the worker to open. An idle loop parks at
     * most {@code maxIdlePark} at a time: doubling up to it after its spins and yields if the worker
     * spins, all of it at once if not.
     */
    public static StepLoop start(StepWorker worker, Duration deadline, Duration maxIdlePark) {
        StepLoop loop = new StepLoop(worker, maxIdlePark);
        AgentRunner.startOnThread(loop.runner,
                r -> Thread.ofPlatform().name("step-loop-" + worker.name()).daemon().unstarted(r));
        try {
            loop.agent.opened.get(deadline.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException(worker.name() + " failed to start: " + e.getCause().getMessage(),
                    e.getCause());
        } catch (TimeoutException e) {
            loop.agent.stopRequested = true;
            throw new IllegalStateException(worker.name() + " did not open within " + deadline);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while starting " + worker.name(), e);
        }
        return loop;
    }

    private static void logFailure(String name, Throwable t) {
        if (t instanceof AgentTerminationException && t.getCause() == null) {
            return; // an orderly stop
        }
        Throwable cause = t instanceof AgentTerminationException ? t.getCause() : t;
        LOG.errorf(cause, "step loop %s stopped for good: a step threw %s; liveness reports it down", name, cause);
    }

    /** How long since the loop last finished a step: the liveness signal operators watch. */
    public long nanosSinceLastTurn() {
        return System.nanoTime() - agent.lastTurnNanos;
    }

    /** Whether the loop thread is still stepping (false once stopped or after a failed step). */
    public boolean turning() {
        return !agent.stopRequested && !agent.stopped.isDone() && !runner.isClosed();
    }

    public String name() {
        return agent.roleName();
    }

    /** What a step threw to stop the loop, once it has; empty while turning or after an orderly stop. */
    public Optional<Throwable> failure() {
        return Optional.ofNullable(agent.failure);
    }

    /** Stops the loop and waits for the worker to close; rethrows what the loop or close failed with. */
    public void stop(Duration deadline) {
        agent.stopRequested = true;
        Thread thread = runner.thread();
        if (thread != null) {
            LockSupport.unpark(thread); // a parked loop would otherwise see the stop only after its park
        }
        try {
            agent.stopped.get(deadline.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException(name() + " stopped with an error: " + e.getCause().getMessage(),
                    e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException(name() + " did not stop within " + deadline);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while stopping " + name(), e);
        } finally {
            if (agent.stopped.isDone()) {
                runner.close(); // the thread has left its duty cycle; this only joins it
            }
        }
    }

    /** Stops with {@link #DEFAULT_STOP_DEADLINE}. */
    @Override
    public void close() {
        stop(DEFAULT_STOP_DEADLINE);
    }

    /** The worker as an Agrona agent: records open, each turn, the failure that ended it, and its close. */
    private static final class WorkerAgent implements Agent {

        private final StepWorker worker;
        private final CompletableFuture<Void> opened = new CompletableFuture<>();
        private final CompletableFuture<Void> stopped = new CompletableFuture<>();
        private volatile boolean stopRequested;
        private volatile long lastTurnNanos = System.nanoTime();
        private volatile Throwable failure;

        WorkerAgent(StepWorker worker) {
            this.worker = worker;
        }

        @Override
        public void onStart() {
            try {
                worker.runsOn(Thread.currentThread());
                worker.open();
            } catch (RuntimeException | Error e) {
                opened.completeExceptionally(e);
                throw e;
            }
            opened.complete(null);
        }

        @Override
        public int doWork() {
            if (stopRequested) {
                throw new AgentTerminationException();
            }
            try {
                int work = worker.doWork();
                lastTurnNanos = System.nanoTime();
                return work;
            } catch (RuntimeException | Error e) {
                failure = e;
                throw new AgentTerminationException(e);
            }
        }

        @Override
        public void onClose() {
            if (!opened.isDone() || opened.isCompletedExceptionally()) {
                stopped.complete(null);
                return;
            }
            try {
                worker.close();
            } catch (RuntimeException e) {
                stopped.completeExceptionally(failure == null ? e : failure);
                return;
            }
            if (failure == null) {
                stopped.complete(null);
            } else {
                stopped.completeExceptionally(failure);
            }
        }

        @Override
        public String roleName() {
            return worker.name();
        }
    }
}
