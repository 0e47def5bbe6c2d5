package io.pdconnector.loop;

import io.pdconnector.error.UnavailableException;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * A bounded queue from caller threads into one step loop; a full queue refuses at once (503). The
 * loop drains at most {@link #COMMANDS_PER_STEP} commands a step, so a flood of callers cannot
 * starve the step's protocol phases (slot writes, READ polls, the reaper).
 */
public final class CommandQueue<C extends LoopCommand> {

    /** Per step; large enough that a busy loop drains a full default queue in four steps. */
    public static final int COMMANDS_PER_STEP = 256;

    private final String name;
    private final int capacity;
    private final ArrayBlockingQueue<C> queue;
    private final LoopGauges gauges;
    /** The loop thread to unpark when a command arrives; null until the loop runs (tests step by hand). */
    private volatile Thread loop;

    public CommandQueue(String loop, int capacity) {
        this(loop, capacity, new LoopGauges());
    }

    /** Counts its refusals in {@code gauges} ({@code pd_commands_refused_total}). */
    public CommandQueue(String loop, int capacity, LoopGauges gauges) {
        if (capacity < 1) {
            throw new IllegalArgumentException("command queue capacity must be positive, got " + capacity);
        }
        this.name = loop;
        this.capacity = capacity;
        this.queue = new ArrayBlockingQueue<>(capacity);
        this.gauges = gauges;
    }

    /**
     * Builds a command around a new reply future and queues it; the future is the caller's to await
     * (with a deadline). A full queue throws {@link UnavailableException} and queues nothing.
     */
    public <R> CompletableFuture<R> submit(Function<CompletableFuture<R>, ? extends C> command) {
        CompletableFuture<R> reply = new CompletableFuture<>();
        if (!queue.offer(command.apply(reply))) {
            gauges.countRefused();
            throw UnavailableException.queueFull(name, capacity);
        }
        Thread waiting = loop;
        if (waiting != null) {
            LockSupport.unpark(waiting); // a parked idle loop would otherwise see it only after its park
        }
        return reply;
    }

    /** Commands submitted from now on wake {@code thread} (the loop's), if it is parked idle. */
    public void wakes(Thread thread) {
        this.loop = thread;
    }

    public int size() {
        return queue.size();
    }

    /** Hands at most {@link #COMMANDS_PER_STEP} commands to {@code handler}; returns how many. */
    public int drain(Consumer<C> handler) {
        int n = 0;
        for (C c; n < COMMANDS_PER_STEP && (c = queue.poll()) != null; n++) {
            handler.accept(c);
        }
        return n;
    }

    /** At shutdown: every command still queued is answered with {@code failure}. */
    public void failAll(RuntimeException failure) {
        for (C c; (c = queue.poll()) != null; ) {
            c.reply().completeExceptionally(failure);
        }
    }
}
