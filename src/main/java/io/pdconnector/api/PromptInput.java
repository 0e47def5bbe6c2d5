package io.pdconnector.api;

import io.pdconnector.error.InvalidInputException;
import io.pdconnector.reference.TextTokenizer;

/**
 * A prompt given as text or as token ids, exactly one of them. Its length is checked before any work
 * that grows with it: a text's words are counted without splitting it, token ids arrive as an
 * {@code int[]} cut off one past the limit ({@link TokenIdArray}).
 */
public final class PromptInput {

    /**
     * The most tokens one prompt may have. As token ids (below 151936: at most 6 digits and a
     * separator, 8 bytes with Python's {@code ", "}) that is 2 MiB of JSON, inside the 4 MiB default of
     * {@code pd.http.max-json-body}.
     */
    public static final int MAX_TOKENS = 1 << 18;

    private PromptInput() {
    }

    /** The prompt's tokens, token ids bounded by the reference engine's vocabulary. */
    public static int[] tokens(String prompt, int[] tokenIds) {
        return tokens(prompt, tokenIds, TextTokenizer.VOCAB);
    }

    /**
     * The prompt's tokens, token ids below {@code vocabulary}: the reference engine's where it computes or
     * compares KV from them, the engine's own model's where only an engine reads the KV (a pull that names its
     * {@code vocab_size}).
     */
    public static int[] tokens(String prompt, int[] tokenIds, int vocabulary) {
        if ((prompt == null) == (tokenIds == null)) {
            throw InvalidInputException.of("give exactly one of prompt and token_ids");
        }
        int[] tokens;
        if (prompt != null) {
            requireWithinLimit(countWords(prompt, MAX_TOKENS + 1));
            tokens = TextTokenizer.encode(prompt);
        } else {
            requireWithinLimit(tokenIds.length);
            tokens = tokenIds;
        }
        if (tokens.length == 0) {
            throw InvalidInputException.of("the prompt has no tokens");
        }
        for (int t : tokens) {
            if (t < 0 || t >= vocabulary) {
                throw InvalidInputException.of("token ids must be in [0, " + vocabulary + "), got " + t
                        + (vocabulary == TextTokenizer.VOCAB ? " (the reference engine's vocabulary; an engine's pull"
                                + " names its model's as vocab_size)" : " (the vocab_size the pull names)"));
            }
        }
        return tokens;
    }

    /**
     * The bound of a pull's token ids: the {@code vocab_size} it names (its engine's model's vocabulary), unless
     * the reference engine is to compare KV from them, whose vocabulary is its own.
     */
    public static int pullVocabulary(Integer vocabSize, boolean referenceReadsTokens) {
        if (vocabSize == null) {
            return TextTokenizer.VOCAB;
        }
        if (referenceReadsTokens && vocabSize > TextTokenizer.VOCAB) {
            throw InvalidInputException.of("matches_reference compares with the reference engine, whose vocabulary"
                    + " is " + TextTokenizer.VOCAB + " ids; this pull names vocab_size " + vocabSize);
        }
        return vocabSize;
    }

    /** Refuses a prompt of more than {@link #MAX_TOKENS} tokens, before anything is built from it. */
    public static void requireWithinLimit(int tokens) {
        if (tokens > MAX_TOKENS) {
            throw InvalidInputException.of("the prompt has more than " + MAX_TOKENS
                    + " tokens, the most one request may carry");
        }
    }

    /**
     * The words {@link TextTokenizer#encode} would make of {@code text} (runs of non-whitespace after
     * stripping), counted without splitting and only up to {@code stopAt}.
     */
    public static int countWords(String text, int stopAt) {
        String t = text.strip();
        int words = 0;
        boolean inWord = false;
        for (int i = 0; i < t.length() && words < stopAt; i++) {
            boolean space = isSeparator(t.charAt(i));
            if (!space && !inWord) {
                words++;
            }
            inWord = !space;
        }
        return words;
    }

    /** The characters of the regex {@code \s} TextTokenizer splits on. */
    private static boolean isSeparator(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\u000B' || c == '\f' || c == '\r';
    }
}
