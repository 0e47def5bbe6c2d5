package io.pdconnector.kv;

import java.util.Arrays;
import java.util.function.Function;
import java.util.stream.Collectors;

/** The lookup of an enum constant by the name the configuration and the wire give it. */
final class WireNames {

    private WireNames() {
    }

    static <E extends Enum<E>> E of(E[] values, Function<E, String> wire, String name, String what) {
        return Arrays.stream(values).filter(v -> wire.apply(v).equals(name)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("unknown " + what + " " + name + "; known: "
                        + Arrays.stream(values).map(wire).collect(Collectors.joining(", "))));
    }
}
