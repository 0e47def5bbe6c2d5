package io.pdconnector.protocol;

import io.pdconnector.error.InvalidInputException;

/**
 * The one check of a prompt's token ids, on both sides: P computes KV from them and D recomputes or
 * compares from them, so both must refuse the same prompts. The vocabulary bound belongs to the model
 * (the HTTP layer checks it for the reference engine), not to the connector.
 */
public final class TokenIds {

    private TokenIds() {
    }

    public static int[] require(int[] tokens) {
        if (tokens == null || tokens.length == 0) {
            throw InvalidInputException.of("a prompt needs at least one token");
        }
        for (int t : tokens) {
            if (t < 0) {
                throw InvalidInputException.of("token ids must not be negative, got " + t);
            }
        }
        return tokens;
    }
}
