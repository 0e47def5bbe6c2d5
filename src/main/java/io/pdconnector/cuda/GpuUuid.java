package io.pdconnector.cuda;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * A GPU's UUID, the 16 bytes {@code cuDeviceGetUuid_v2} reports, written as {@code nvidia-smi -L} prints
 * it: {@code GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx} (or {@code MIG-...} for a MIG instance). Two UUIDs
 * are equal when their bytes are: the prefix is how it was written, not part of the identity.
 */
public record GpuUuid(byte[] bytes) {

    private static final Pattern TEXT = Pattern.compile(
            "(GPU|MIG)-[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}");

    public GpuUuid {
        if (bytes == null || bytes.length != 16) {
            throw new IllegalArgumentException("a GPU UUID is 16 bytes");
        }
        bytes = bytes.clone();
    }

    public static GpuUuid parse(String text) {
        if (text == null || !TEXT.matcher(text).matches()) {
            throw new IllegalArgumentException("not a GPU UUID as nvidia-smi -L prints one (GPU-8-4-4-4-12 hex digits): "
                    + text);
        }
        return new GpuUuid(HexFormat.of().parseHex(text.substring(4).replace("-", "")));
    }

    @Override
    public byte[] bytes() {
        return bytes.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GpuUuid other && Arrays.equals(bytes, other.bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }

    /** {@code GPU-...}, as nvidia-smi prints a whole GPU's UUID. */
    @Override
    public String toString() {
        String hex = HexFormat.of().formatHex(bytes).toLowerCase(Locale.ROOT);
        return "GPU-" + hex.substring(0, 8) + "-" + hex.substring(8, 12) + "-" + hex.substring(12, 16) + "-"
                + hex.substring(16, 20) + "-" + hex.substring(20);
    }
}
