package io.pdconnector.testing;

import java.util.Locale;

/** What a READ on the recording engine reads: KV blocks or lease slots (by its remote memory). */
public enum ReadKind {
    BLOCK,
    SLOT;

    /** As the engine's event log spells it ("post slot d-d0->p-p0 ..."). */
    public String word() {
        return name().toLowerCase(Locale.ROOT);
    }
}
