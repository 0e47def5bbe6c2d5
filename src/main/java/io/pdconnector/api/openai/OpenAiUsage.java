package io.pdconnector.api.openai;

import com.fasterxml.jackson.annotation.JsonProperty;

/** OpenAI's {@code usage}: tokens of the prompt, of the answer, and their sum. */
public record OpenAiUsage(
        @JsonProperty("prompt_tokens") int promptTokens,
        @JsonProperty("completion_tokens") int completionTokens,
        @JsonProperty("total_tokens") int totalTokens) {

    static OpenAiUsage of(Generation g) {
        return new OpenAiUsage(g.promptTokens(), g.words().size(), g.promptTokens() + g.words().size());
    }
}
