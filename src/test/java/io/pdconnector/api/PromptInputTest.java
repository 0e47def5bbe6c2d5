package io.pdconnector.api;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.pdconnector.error.InvalidInputException;
import io.pdconnector.reference.TextTokenizer;
import org.junit.jupiter.api.Test;

/** The prompt's length is judged before it is split, by a count that agrees with the tokenizer. */
class PromptInputTest {

    @Test
    void theWordCountIsTheTokenizersTokenCount() {
        for (String text : new String[] {"", "   ", "a", " a ", "a b", "a\tb\nc\r\nd\u000Be\ff", "\u2003a\u2003b ",
                "a\u00A0b c", "  many   spaces\t\there  ", "\u001Cx y\u001F"}) {
            assertEquals(TextTokenizer.encode(text).length, PromptInput.countWords(text, Integer.MAX_VALUE), text);
        }
        assertEquals(3, PromptInput.countWords("a b c d e", 3), "counting stops at the bound");
    }

    @Test
    void oneTokenTooManyIsRefusedAsTextAndAsIdsAndTheLimitItselfIsServed() {
        String limit = "w ".repeat(PromptInput.MAX_TOKENS);
        assertEquals(PromptInput.MAX_TOKENS, PromptInput.tokens(limit, null).length);
        InvalidInputException e = assertThrows(InvalidInputException.class, () -> PromptInput.tokens(limit + "w", null));
        assertEquals("the prompt has more than " + PromptInput.MAX_TOKENS + " tokens, the most one request may carry",
                e.getMessage());
        assertThrows(InvalidInputException.class, () -> PromptInput.tokens(null, new int[PromptInput.MAX_TOKENS + 1]));
        assertArrayEquals(new int[] {1, 2}, PromptInput.tokens(null, new int[] {1, 2}));
    }
}
