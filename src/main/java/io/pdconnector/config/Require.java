package io.pdconnector.config;

import java.time.Duration;
import java.util.Objects;

/** The argument checks the settings records share. */
final class Require {

    private Require() {
    }

    static void positive(String name, int value) {
        if (value < 1) {
            throw new IllegalArgumentException(name + " must be positive, got " + value);
        }
    }

    static void positive(String name, Duration value) {
        Objects.requireNonNull(value, name);
        if (value.isNegative() || value.isZero()) {
            throw new IllegalArgumentException(name + " must be positive, got " + value);
        }
    }
}
