package io.pdconnector.kv;

/**
 * The element type of a KV cache by name, as vLLM's {@code --kv-cache-dtype} resolves it: what the bytes mean,
 * which {@code dtypeBytes} alone cannot say (bfloat16 and float16 are both 2 bytes, the fp8 formats both 1).
 * pd-connector moves the bytes as they are and never converts; naming the type puts it in the handshake, so a
 * decoder of another format is refused instead of decoding from bytes it reads otherwise.
 */
public enum KvDtype {
    BFLOAT16("bfloat16", 2),
    FLOAT16("float16", 2),
    FLOAT32("float32", 4),
    FP8_E4M3("fp8_e4m3", 1),
    FP8_E5M2("fp8_e5m2", 1);

    /** The names, as the configuration takes them. */
    public static final String NAMES = "bfloat16|float16|float32|fp8_e4m3|fp8_e5m2";

    private final String wire;
    private final int bytes;

    KvDtype(String wire, int bytes) {
        this.wire = wire;
        this.bytes = bytes;
    }

    public String wire() {
        return wire;
    }

    public int bytes() {
        return bytes;
    }

    /** Whether the engine keeps this type under per-layer scales: the fp8 formats. */
    public boolean quantized() {
        return this == FP8_E4M3 || this == FP8_E5M2;
    }

    public static KvDtype of(String name) {
        return WireNames.of(values(), KvDtype::wire, name, "KV dtype");
    }
}
