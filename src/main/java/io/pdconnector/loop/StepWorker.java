package io.pdconnector.loop;

/**
 * Work a {@link StepLoop} runs on its one thread, in the style of an Aeron agent: {@code open}
 * creates every native handle (transfer agents may only be called by the thread that created them),
 * {@code doWork} runs one step and says how much it did, {@code close} releases everything.
 */
public interface StepWorker {

    String name();

    /**
     * The loop's thread, told before {@code open}: a worker hands it to its {@link CommandQueue}, so
     * a command wakes a parked loop at once instead of after its park.
     */
    default void runsOn(Thread loop) {
    }

    void open();

    /** One step; returns the units of work done, 0 when idle. */
    int doWork();

    /**
     * Whether what this worker waits for when idle can arrive without a command and is worth catching
     * within microseconds (D: a READ's completion), so an idle loop spins and yields before it parks;
     * false when what it waits for comes as commands, which wake it, and anything else may wait for
     * the park (P: read notifications, expiries), so it parks at once.
     */
    default boolean spinsWhenIdle() {
        return true;
    }

    /**
     * For a worker that does not {@link #spinsWhenIdle spin}: how long from now until something falls due
     * that no command wakes it for (P: the reaper's next deadline), {@code 0} if it is due already,
     * {@link Long#MAX_VALUE} if nothing is. An idle loop parks no longer than this, so a deadline is
     * acted on when it comes rather than up to a whole park later. Asked on the loop's thread after an
     * idle step.
     */
    default long nanosUntilDue() {
        return Long.MAX_VALUE;
    }

    void close();
}
