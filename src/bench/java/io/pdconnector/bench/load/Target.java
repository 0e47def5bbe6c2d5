package io.pdconnector.bench.load;

import java.net.URI;

/**
 * One P and one D the load goes to. {@code name} prefixes the figures ("" for a lone pair, "on" or
 * "off" when verification is compared); {@code verification} is what the pair runs with.
 */
public record Target(String name, URI producer, URI consumer, boolean verification) {

    /** {@code name_} or nothing, to prefix a figure. */
    public String prefix() {
        return name.isEmpty() ? "" : name + "_";
    }
}
