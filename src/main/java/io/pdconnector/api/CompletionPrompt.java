package io.pdconnector.api;

import io.pdconnector.error.InvalidInputException;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@code prompt} of a completion request as token ids. OpenAI allows a string, a list of token
 * ids, or a batch (a list of strings or of token-id lists); a batch of one is unwrapped, larger ones
 * are refused because one request is one pull of one prompt's KV.
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
        return PromptInput.tokens(null, tokenIds(list));
    }

    private static List<Integer> tokenIds(List<?> list) {
        List<Integer> ids = new ArrayList<>(list.size());
        for (Object o : list) {
            if (!(o instanceof Number n) || n.doubleValue() != Math.rint(n.doubleValue())
                    || n.longValue() < Integer.MIN_VALUE || n.longValue() > Integer.MAX_VALUE) {
                throw InvalidInputException.of("prompt token ids must be integers, got " + o);
            }
            ids.add(n.intValue());
        }
        return ids;
    }
}
