package io.pdconnector.api.engine;

import com.fasterxml.jackson.databind.JsonNode;
import io.pdconnector.api.PromptInput;
import io.pdconnector.error.InvalidInputException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Base64;

/**
 * {@code token_ids_le32} of an engine socket pull: the prompt's token ids as base64 of little-endian unsigned
 * 32-bit words, in place of the JSON array. A 4,096-token array cost the plugin about 0.3 ms to write and this
 * instance about as much to read; the packed string is one JSON value either way. The hello's
 * {@code features} names it, so an engine only sends it to an instance that reads it.
 */
final class PackedTokenIds {

    static final String FIELD = "token_ids_le32";
    static final String FEATURE = "token-ids-le32";

    private PackedTokenIds() {
    }

    /**
     * The ids, unchecked against the vocabulary ({@link PromptInput#tokens} does that; a word of 2^31 or more
     * reads as negative, which it refuses). A prompt too long is refused by its length before it is decoded.
     */
    static int[] decode(JsonNode packed) {
        if (!packed.isTextual()) {
            throw InvalidInputException.of(FIELD + " is a string (base64 of little-endian 32-bit token ids)");
        }
        String text = packed.asText();
        // 4 base64 characters hold 3 bytes: refuse by the length before decoding anything
        PromptInput.requireWithinLimit((int) Math.min(Integer.MAX_VALUE, (long) text.length() * 3 / 16));
        byte[] bytes;
        try {
            bytes = Base64.getDecoder().decode(text);
        } catch (IllegalArgumentException e) {
            throw InvalidInputException.of(FIELD + " is not base64: " + e.getMessage());
        }
        if (bytes.length % Integer.BYTES != 0) {
            throw InvalidInputException.of(FIELD + " holds " + bytes.length + " bytes, not a whole number of"
                    + " 32-bit token ids");
        }
        int[] ids = new int[bytes.length / Integer.BYTES];
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asIntBuffer().get(ids);
        return ids;
    }
}
