package io.pdconnector.api;

import io.pdconnector.reference.TextTokenizer;
import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.media.Schema;

/**
 * For the OpenAPI document only: one token id as {@link PromptInput} accepts it, so {@code token_ids}
 * (and a completion's list prompt) is documented as an array of ids in the vocabulary, and API
 * fuzzing generates ids the service can take.
 */
@Schema(name = "TokenId", type = SchemaType.INTEGER, minimum = "0", maximum = "" + (TextTokenizer.VOCAB - 1))
final class TokenIdSchema {

    /** The documented token_ids: 1 to PromptInput.MAX_TOKENS ids. */
    static final int MAX_ITEMS = PromptInput.MAX_TOKENS;

    private TokenIdSchema() {
    }
}
