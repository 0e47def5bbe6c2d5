package io.pdconnector.api.openai;

/**
 * What {@code /v1/completions} and {@code /v1/chat/completions} requests share. Fields a router or
 * client may send that the reference engine has no use for (temperature, top_p, min_tokens, ...) are
 * accepted and ignored, as the routers forward whole bodies.
 */
interface OpenAiRequest {

    /** OpenAI's default for completions; used for chat too, where the real default is "up to the context". */
    int DEFAULT_MAX_TOKENS = 16;
    String DEFAULT_MODEL = "pd-connector-reference";

    String model();

    Boolean stream();

    StreamOptions streamOptions();

    Object kvTransferParams();

    /** How many tokens to generate: the reference engine never stops early, so always exactly this many. */
    int outputTokens();

    default String modelName() {
        return model() == null || model().isBlank() ? DEFAULT_MODEL : model();
    }

    default boolean streaming() {
        return Boolean.TRUE.equals(stream());
    }

    default boolean includeUsage() {
        return streamOptions() != null && Boolean.TRUE.equals(streamOptions().includeUsage());
    }
}
