package io.pdconnector.lease;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.function.Consumer;

/** A bounded queue from caller threads into one step loop; a full queue refuses at once. */
public final class CommandQueue<C> {

    private final String loop;
    private final int capacity;
    private final ArrayBlockingQueue<C> queue;

    public CommandQueue(String loop, int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("command queue capacity must be positive, got " + capacity);
        }
        this.loop = loop;
        this.capacity = capacity;
        this.queue = new ArrayBlockingQueue<>(capacity);
    }

    public void offer(C command) {
        if (!queue.offer(command)) {
            throw new SchedulerBusyException(loop, capacity);
        }
    }

    /** Hands at most {@code limit} commands to {@code handler}; returns how many. */
    public int size() {
        return queue.size();
    }

    public int drain(Consumer<C> handler, int limit) {
        int n = 0;
        for (C c; n < limit && (c = queue.poll()) != null; n++) {
            handler.accept(c);
        }
        return n;
    }

    /** Empties the queue at shutdown, handing each left-over command to {@code handler}. */
    public void drainAll(Consumer<C> handler) {
        for (C c; (c = queue.poll()) != null; ) {
            handler.accept(c);
        }
    }
}
