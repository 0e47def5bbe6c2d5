package io.pdconnector.error;

/**
 * Out of capacity or out of time: no free blocks, a full command queue, no answer from a step loop
 * within the deadline (503 with Retry-After). The same request may succeed later.
 */
public final class UnavailableException extends PdException {

    private static final String DEADLINE_EXCEEDED = "deadline-exceeded";

    public UnavailableException(String reason, String message) {
        super(reason, message, null, null);
    }

    public static UnavailableException noFreeBlocks(String message) {
        return new UnavailableException("no-free-blocks", message);
    }

    public static UnavailableException queueFull(String loop, int capacity) {
        return new UnavailableException("queue-full",
                loop + " is busy: its command queue holds " + capacity + " commands; retry later");
    }

    public static UnavailableException deadlineExceeded(String message) {
        return new UnavailableException(DEADLINE_EXCEEDED, message);
    }

    /** Whether a step loop did not answer in time: the command may still take effect later. */
    public boolean deadlineExceeded() {
        return DEADLINE_EXCEEDED.equals(reason());
    }
}
