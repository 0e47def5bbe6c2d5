package io.pdconnector.api;

import io.pdconnector.error.InvalidInputException;
import io.pdconnector.reference.TextTokenizer;
import java.util.List;

/** A prompt given as text or as token ids, exactly one of them. */
final class PromptInput {

    static final int MAX_TOKENS = 1 << 20;

    private PromptInput() {
    }

    static int[] tokens(String prompt, List<Integer> tokenIds) {
        if ((prompt == null) == (tokenIds == null)) {
            throw InvalidInputException.of("give exactly one of prompt and token_ids");
        }
        int[] tokens = prompt != null ? TextTokenizer.encode(prompt)
                : tokenIds.stream().mapToInt(t -> t == null ? -1 : t).toArray();
        if (tokens.length == 0) {
            throw InvalidInputException.of("the prompt has no tokens");
        }
        if (tokens.length > MAX_TOKENS) {
            throw InvalidInputException.of("the prompt has " + tokens.length + " tokens, more than " + MAX_TOKENS);
        }
        for (int t : tokens) {
            if (t < 0 || t >= TextTokenizer.VOCAB) {
                throw InvalidInputException.of("token ids must be in [0, " + TextTokenizer.VOCAB + "), got " + t);
            }
        }
        return tokens;
    }
}
