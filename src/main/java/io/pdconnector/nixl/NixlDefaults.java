package io.pdconnector.nixl;

/** Defaults shared by the configuration and by tools that start agents without it. */
public final class NixlDefaults {

    /**
     * The progress thread's poll timeout. NIXL 1.5.1's thread waits in {@code poll} on its UCX worker's
     * event descriptor, so a message wakes it at once; the timeout, which NIXL rounds up to whole
     * milliseconds, only bounds a wait for a missed event, and each expiry is an idle wake-up. At 100 us
     * (1 ms after rounding) an idle agent woke 1,000 times a second, 1.4-1.6 % of a core and most of a
     * plugin P's progress-thread CPU at 20 requests a second; at 10 ms 0.4 %, with D's loads and P's lease
     * hold as before (docs/performance.md, "NIXL's progress thread"). At 0 the thread spins: an idle agent
     * burned a whole core (194-299 of 300 CPU ticks over 3 s).
     */
    public static final long PROGRESS_DELAY_US = 10_000;

    private NixlDefaults() {
    }
}
