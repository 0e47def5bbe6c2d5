package io.pdconnector.reference;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The reference engine's tokenizer for text prompts: one token per whitespace-separated word, its id
 * a hash of the word's UTF-8 bytes in a Qwen2.5-sized vocabulary. Not a real tokenizer: it only has
 * to be deterministic, so that P and D turn the same prompt into the same tokens.
 */
public final class TextTokenizer {

    public static final int VOCAB = 151_936;

    private TextTokenizer() {
    }

    public static int[] encode(String text) {
        String trimmed = text.strip();
        if (trimmed.isEmpty()) {
            return new int[0];
        }
        return Arrays.stream(trimmed.split("\\s+")).mapToInt(TextTokenizer::id).toArray();
    }

    private static int id(String word) {
        int h = 0x811C9DC5;
        for (byte b : word.getBytes(StandardCharsets.UTF_8)) {
            h = (h ^ (b & 0xFF)) * 0x01000193;
        }
        return Math.floorMod(h, VOCAB);
    }
}
