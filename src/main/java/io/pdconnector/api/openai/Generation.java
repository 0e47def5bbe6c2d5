package io.pdconnector.api.openai;

import java.util.List;
import java.util.Map;

/**
 * What one leg generated: the output tokens as words, the prompt's token count, and on P's leg the
 * lease-bearing params for D (null on the other legs).
 */
record Generation(List<String> words, int promptTokens, Map<String, Object> kvTransferParams) {

    Generation {
        words = List.copyOf(words);
    }
}
