package io.pdconnector.bench.load;

import java.util.Random;

/**
 * Prompt lengths in tokens: one fixed length ({@code 32}) or uniform over an inclusive range
 * ({@code 32:512}). Block size is the model's (16 tokens by default), so 512 tokens are 32 blocks.
 */
public record TokenDistribution(int min, int max) {

    /** The service's own bound on one prompt. */
    public static final int MAX_TOKENS = 262_144;

    public TokenDistribution {
        if (min < 1 || max > MAX_TOKENS || min > max) {
            throw new IllegalArgumentException("token counts must satisfy 1 <= min <= max <= " + MAX_TOKENS + ", got "
                    + min + ":" + max);
        }
    }

    /** {@code 32} (fixed) or {@code 32:512} (uniform, both ends included). */
    public static TokenDistribution parse(String text) {
        String t = text.strip();
        int colon = t.indexOf(':');
        try {
            if (colon < 0) {
                int n = Integer.parseInt(t);
                return new TokenDistribution(n, n);
            }
            return new TokenDistribution(Integer.parseInt(t.substring(0, colon).strip()),
                    Integer.parseInt(t.substring(colon + 1).strip()));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--tokens takes N or MIN:MAX, got '" + text + "'", e);
        }
    }

    public boolean fixed() {
        return min == max;
    }

    /** One length: {@code min} when fixed, else uniform in [min, max]. */
    public int sample(Random random) {
        return fixed() ? min : min + random.nextInt(max - min + 1);
    }

    /** Blocks of the longest prompt, for sizing the pools. */
    public int maxBlocks(int blockTokens) {
        return blocks(max, blockTokens);
    }

    /** The mean length in tokens. */
    public double meanTokens() {
        return (min + (double) max) / 2;
    }

    public static int blocks(int tokens, int blockTokens) {
        return (tokens + blockTokens - 1) / blockTokens;
    }

    /** For figure names: {@code t32} or {@code t32-512}. */
    public String label() {
        return fixed() ? "t" + min : "t" + min + "-" + max;
    }

    @Override
    public String toString() {
        return fixed() ? Integer.toString(min) : min + ":" + max;
    }
}
