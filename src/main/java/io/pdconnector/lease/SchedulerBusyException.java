package io.pdconnector.lease;

/** A step loop's command queue is full; the caller should answer 503 and let the client retry. */
public final class SchedulerBusyException extends RuntimeException {

    public SchedulerBusyException(String loop, int capacity) {
        super(loop + " is busy: its command queue holds " + capacity + " commands; retry later");
    }
}
