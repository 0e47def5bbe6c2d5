package io.pdconnector.api.openai;

/** The fields every reply and chunk of one request repeats: its OpenAI id, creation second and model. */
record ReplyHeader(String id, long created, String model) {

    /**
     * The reference engine never stops before {@code max_tokens}: every answer ends for that reason,
     * including P's one-token answer to a router's {@code max_tokens: 1}.
     */
    static final String FINISH_REASON = "length";
}
