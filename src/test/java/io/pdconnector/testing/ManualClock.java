package io.pdconnector.testing;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;

/** Time that moves only when a test says so. */
public final class ManualClock implements InstantSource {

    private long millis = 1_000_000;

    @Override
    public Instant instant() {
        return Instant.ofEpochMilli(millis);
    }

    @Override
    public long millis() {
        return millis;
    }

    public void advance(Duration d) {
        millis += d.toMillis();
    }
}
