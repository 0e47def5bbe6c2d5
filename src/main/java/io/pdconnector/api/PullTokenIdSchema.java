package io.pdconnector.api;

import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.media.Schema;

/**
 * For the OpenAPI document only: one token id of a pull, below its {@code vocab_size} when it names one and
 * below the reference engine's vocabulary otherwise ({@link PromptInput#pullVocabulary}), so no fixed maximum.
 */
@Schema(name = "PullTokenId", type = SchemaType.INTEGER, minimum = "0", description = "below the pull's vocab_size,"
        + " or below 151936 (the reference engine's vocabulary) when it names none")
final class PullTokenIdSchema {

    private PullTokenIdSchema() {
    }
}
