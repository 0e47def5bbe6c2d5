package io.pdconnector.config;

import java.time.Duration;

/**
 * How this instance runs its step loops ({@code pd.loop.*}): how long a loop may take to open (NIXL,
 * slot registration) and to stop, the longest pause of an idle loop, and how long a loop may go
 * without finishing a step before liveness reports it stuck.
 */
public record LoopSettings(Duration openDeadline, Duration stopDeadline, Duration maxIdlePark,
        Duration stallThreshold) {

    public LoopSettings {
        Require.positive("openDeadline", openDeadline);
        Require.positive("stopDeadline", stopDeadline);
        Require.positive("maxIdlePark", maxIdlePark);
        Require.positive("stallThreshold", stallThreshold);
    }
}
