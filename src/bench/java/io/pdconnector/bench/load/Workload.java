package io.pdconnector.bench.load;

import java.util.Random;

/**
 * The requests of one run: request {@code i} of a phase has a fixed id and a prompt drawn from the
 * length distribution and the seed, so a rerun with the same options sends the same prompts. Token
 * ids are uniform over the reference tokenizer's vocabulary, so no two prompts share their KV.
 */
public final class Workload {

    /** {@code io.pdconnector.reference.TextTokenizer.VOCAB}: token ids must lie below it. */
    static final int VOCAB = 151_936;

    private final String prefix;
    private final TokenDistribution lengths;
    private final long seed;

    /** {@code prefix} makes ids unique per run and phase: at most 200 characters of [A-Za-z0-9._-]. */
    public Workload(String prefix, TokenDistribution lengths, long seed) {
        if (!prefix.matches("[A-Za-z0-9._-]{1,200}")) {
            throw new IllegalArgumentException("bad request id prefix " + prefix);
        }
        this.prefix = prefix;
        this.lengths = lengths;
        this.seed = seed;
    }

    /** One request to send. */
    public record Request(String id, int[] tokens) {
    }

    public Request request(int i) {
        Random r = new Random(seed * 0x9E3779B97F4A7C15L + i);
        int[] tokens = new int[lengths.sample(r)];
        for (int k = 0; k < tokens.length; k++) {
            tokens[k] = r.nextInt(VOCAB);
        }
        return new Request(prefix + "-" + i, tokens);
    }

    public TokenDistribution lengths() {
        return lengths;
    }
}
