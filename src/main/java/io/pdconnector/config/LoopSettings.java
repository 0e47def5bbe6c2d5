package io.pdconnector.config;

import java.time.Duration;

/**
 * How this instance runs its step loops ({@code pd.loop.*}): how long a loop may take to open (NIXL,
 * slot registration) and to stop, the pauses of idle loops (D's longest, P's), and how long a loop may go
 * without finishing a step before liveness reports it stuck.
 */
public record LoopSettings(Duration openDeadline, Duration stopDeadline, Duration maxIdlePark,
        Duration producerIdlePark, Duration stallThreshold) {

    public LoopSettings {
        Require.positive("openDeadline", openDeadline);
        Require.positive("stopDeadline", stopDeadline);
        Require.positive("maxIdlePark", maxIdlePark);
        Require.positive("producerIdlePark", producerIdlePark);
        Require.positive("stallThreshold", stallThreshold);
    }
}
