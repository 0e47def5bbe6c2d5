package io.pdconnector.api.openai;

import io.pdconnector.api.PromptInput;
import io.pdconnector.error.InvalidInputException;
import java.util.List;

/**
 * The {@code prompt} of a completion request as token ids. OpenAI allows a string, a list of token
 * ids, or a batch (a list of strings or of token-id lists); a batch of one is unwrapped, larger ones
 * are refused because one request is one pull of one prompt's KV. A list's length is checked before
 * its ids are copied (the list itself is bounded by {@code pd.http.max-json-body}).
 */
final class CompletionPrompt {

    private CompletionPrompt() {
    }

    static int[] tokens(Object prompt) {
        if (prompt instanceof String text) {
            return PromptInput.tokens(text, null);
        }
        if (!(prompt instanceof List<?> list)) {
            throw InvalidInputException.of("prompt must be a string or a list of token ids");
        }
        if (list.isEmpty()) {
            throw InvalidInputException.of("prompt is an empty list");
        }
        Object first = list.getFirst();
        if (first instanceof String || first instanceof List<?>) {
            if (list.size() > 1) {
                throw InvalidInputException.of("batched prompts are not supported: send one prompt per request, got "
                        + list.size());
            }
            return tokens(first);
        }
        PromptInput.requireWithinLimit(list.size());
        return PromptInput.tokens(null, tokenIds(list));
    }

    private static int[] tokenIds(List<?> list) {
        int[] ids = new int[list.size()];
        int i = 0;
        for (Object o : list) {
            if (!(o instanceof Number n) || n.doubleValue() != Math.rint(n.doubleValue())
                    || n.longValue() < Integer.MIN_VALUE || n.longValue() > Integer.MAX_VALUE) {
                throw InvalidInputException.of("prompt token ids must be integers, got " + o);
            }
            ids[i++] = n.intValue();
        }
        return ids;
    }
}
