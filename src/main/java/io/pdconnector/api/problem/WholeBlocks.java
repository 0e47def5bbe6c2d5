package io.pdconnector.api.problem;

import io.pdconnector.config.PdConfig;

/**
 * The API's paths that use a pulled request's blocks whole on D (a read-out, a checksum, a reference check, the
 * reference engine's decode) are refused where pd.model.kv-groups names the KV cache groups: a pull reads a window
 * group's layers of a request's last blocks only, so an older block's window layers on D are another request's.
 * Refused before anything reaches a step loop, so a refusal changes no state.
 */
public final class WholeBlocks {

    /** The machine-readable reason of the refusal. */
    public static final String REASON = "kv-read-in-part";

    private WholeBlocks() {
    }

    /** Refuses {@code use} when this instance's pulls read blocks in part. */
    public static void require(PdConfig config, String use) {
        if (config.model().kvGroups().isPresent()) {
            throw new ProblemException(Problem.of(409, REASON, "KV read in part", use + " needs a request's blocks "
                    + "whole, and with pd.model.kv-groups=" + config.model().kvGroups().get() + " a pull reads a "
                    + "window group's layers of the request's last blocks only"));
        }
    }
}
