package io.pdconnector.nixl;

/** Defaults shared by the configuration and by tools that start agents without it. */
public final class NixlDefaults {

    /**
     * Pause of NIXL's progress thread between polls. At 0 the thread spins and an idle agent burns a
     * whole core (measured here: 194-299 of 300 CPU ticks over 3 s idle); at 100 us it used 8 ticks,
     * and two-process READs were faster, not slower, because nothing spun against them on 2 cores.
     */
    public static final long PROGRESS_DELAY_US = 100;

    private NixlDefaults() {
    }
}
