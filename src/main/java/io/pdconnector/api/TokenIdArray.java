package io.pdconnector.api;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.deser.std.StdDeserializer;
import java.io.IOException;
import java.util.Arrays;

/**
 * {@code token_ids} straight into an {@code int[]}, never boxed, and never more than
 * {@link PromptInput#MAX_TOKENS} + 1 of them kept: the rest of a longer list is only skipped, so
 * {@link PromptInput} refuses it by its length without the list ever being held. A {@code null} id
 * becomes -1, which the vocabulary check refuses by name; anything but an integer is a malformed request.
 */
final class TokenIdArray extends StdDeserializer<int[]> {

    TokenIdArray() {
        super(int[].class);
    }

    @Override
    public int[] deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
        if (!p.isExpectedStartArrayToken()) {
            return (int[]) ctxt.handleUnexpectedToken(int[].class, p);
        }
        int[] ids = new int[256];
        int n = 0;
        for (JsonToken t = p.nextToken(); t != JsonToken.END_ARRAY; t = p.nextToken()) {
            int id = id(t, p, ctxt);
            if (n > PromptInput.MAX_TOKENS) {
                continue; // one past the limit is kept, so the length says "too many"
            }
            if (n == ids.length) {
                ids = Arrays.copyOf(ids, Math.min(2 * n, PromptInput.MAX_TOKENS + 1));
            }
            ids[n++] = id;
        }
        return Arrays.copyOf(ids, n);
    }

    private int id(JsonToken t, JsonParser p, DeserializationContext ctxt) throws IOException {
        if (t == JsonToken.VALUE_NULL) {
            return -1;
        }
        if (t == JsonToken.VALUE_NUMBER_INT && p.getNumberType() == JsonParser.NumberType.INT) {
            return p.getIntValue();
        }
        if (t == JsonToken.VALUE_NUMBER_FLOAT || t == JsonToken.VALUE_NUMBER_INT) {
            double d = p.getDoubleValue();
            if (d == Math.rint(d) && d >= Integer.MIN_VALUE && d <= Integer.MAX_VALUE) {
                return (int) d;
            }
        }
        Object v = ctxt.handleUnexpectedToken(int.class, t, p, "token_ids must be a list of integers, got %s",
                p.getText());
        return v instanceof Number number ? number.intValue() : -1;
    }
}
