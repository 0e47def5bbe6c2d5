package io.pdconnector.controlplane;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jboss.logging.Logger;

/**
 * The one thread an {@link EtcdStore} does everything on. Callers wait for it with a deadline and
 * never see a task fail; once stopped, what is handed to it is dropped.
 */
final class EtcdWorker {

    private static final Logger LOG = Logger.getLogger(EtcdWorker.class);

    private final ScheduledThreadPoolExecutor executor;
    private final Duration wait;
    private volatile Thread thread;

    /** {@code wait}: the longest a caller waits for its task. */
    EtcdWorker(String name, Duration wait) {
        this.wait = wait;
        this.executor = new ScheduledThreadPoolExecutor(1, r -> thread = Thread.ofPlatform().name(name).daemon()
                .unstarted(r));
        executor.setRemoveOnCancelPolicy(true);
    }

    boolean onIt() {
        return Thread.currentThread() == thread;
    }

    void post(Runnable task) {
        try {
            executor.execute(() -> runQuietly(task));
        } catch (RejectedExecutionException stopped) {
            LOG.debug("etcd store stopped; a task was dropped");
        }
    }

    ScheduledFuture<?> schedule(Runnable task, Duration delay) {
        return executor.schedule(() -> runQuietly(task), delay.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Runs {@code task} on the worker and waits for it, at most the wait: what is not done by then goes on. */
    void runAndWait(Runnable task) {
        if (onIt()) {
            runQuietly(task);
            return;
        }
        Future<?> f;
        try {
            f = executor.submit(() -> runQuietly(task));
        } catch (RejectedExecutionException stopped) {
            f = CompletableFuture.completedFuture(null);
        }
        try {
            f.get(wait.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            LOG.debugf("etcd store busy for more than %s; the task goes on in the background", wait);
        } catch (ExecutionException e) {
            LOG.errorf(e.getCause(), "etcd store task failed");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Runs {@code last} (waiting as {@link #runAndWait} does), then stops the thread. */
    void stop(Runnable last) {
        runAndWait(last);
        executor.shutdownNow();
        if (onIt()) {
            return;
        }
        try {
            if (!executor.awaitTermination(wait.toMillis(), TimeUnit.MILLISECONDS)) {
                LOG.warnf("the etcd store's thread did not stop within %s", wait);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void runQuietly(Runnable task) {
        try {
            task.run();
        } catch (RuntimeException e) {
            LOG.errorf(e, "etcd store task failed");
        }
    }
}
