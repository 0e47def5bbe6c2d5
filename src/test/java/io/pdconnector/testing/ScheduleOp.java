package io.pdconnector.testing;

import java.util.Random;

/**
 * The operations of the randomized schedule tests and how often each is drawn, in one place so
 * that the loopback schedule and the NIXL one stay the same schedule.
 */
public enum ScheduleOp {
    PREFILL(20),
    PULL(20),
    ADVANCE_CLOCK(15),
    STEP_PRODUCERS(15),
    STEP_CONSUMERS(15),
    REPLAY_NOTIFICATION(7),
    CHAOS_HEARTBEAT(4),
    ABORT_PREFILL(2),
    ABORT_PULL(2);

    private final int percent;

    ScheduleOp(int percent) {
        this.percent = percent;
    }

    /** One draw of {@code random.nextInt(100)}, mapped onto the cumulative shares above. */
    public static ScheduleOp draw(Random random) {
        int op = random.nextInt(100);
        for (ScheduleOp candidate : values()) {
            if (op < candidate.percent) {
                return candidate;
            }
            op -= candidate.percent;
        }
        throw new IllegalStateException("the shares of ScheduleOp do not add up to 100");
    }
}
