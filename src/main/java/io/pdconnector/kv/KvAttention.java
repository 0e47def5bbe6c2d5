package io.pdconnector.kv;

/**
 * What a token's KV is in one layer, which decides how a block is split over tensor-parallel ranks.
 * <ul>
 * <li>{@link #MHA}: a K and a V row per KV head (multi-head, grouped-query and multi-query attention); a rank
 * of a {@code tp}-way instance holds {@code kvHeads / tp} heads, and a decoder reads each head from the
 * prefill rank that holds it.</li>
 * <li>{@link #MLA}: one latent row (multi-head latent attention: {@code kv_lora_rank} plus the rope part),
 * which every rank of an engine holds whole, the same bytes. A prefill instance holds it on one rank whatever
 * its TP, and every decode rank reads it from there: no byte crosses twice from P, and a lease covers exactly
 * the rank read.</li>
 * </ul>
 */
public enum KvAttention {
    MHA("mha", 2),
    MLA("mla", 1);

    /** The names, as the configuration takes them. */
    public static final String NAMES = "mha|mla";

    private final String wire;
    private final int planes;

    KvAttention(String wire, int planes) {
        this.wire = wire;
        this.planes = planes;
    }

    public String wire() {
        return wire;
    }

    /** Planes per layer and head in a block: K and V, or the one latent. */
    public int planes() {
        return planes;
    }

    public static KvAttention of(String name) {
        return WireNames.of(values(), KvAttention::wire, name, "KV attention");
    }
}
