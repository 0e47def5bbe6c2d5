package io.pdconnector.api.openai;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The JSON of {@code /v1/completions} replies, in OpenAI's shape. Each output token is a word with a
 * leading space (a completion continues the prompt), so the chunks of a stream concatenate to the
 * text of the non-streamed reply.
 */
final class CompletionBodies {

    static final String OBJECT = "text_completion";

    private CompletionBodies() {
    }

    /** {@code kv_transfer_params} at the top level, where the routers read it from P's reply. */
    public record Completion(String id, String object, long created, String model, List<Choice> choices,
            OpenAiUsage usage,
            @JsonProperty("kv_transfer_params") @JsonInclude(JsonInclude.Include.NON_NULL) Map<String, Object> kvTransferParams) {
    }

    public record Choice(int index, String text, Object logprobs, @JsonProperty("finish_reason") String finishReason) {
    }

    /** A stream event; {@code usage} is null except on the last one, when stream_options.include_usage asks. */
    public record Chunk(String id, String object, long created, String model, List<Choice> choices, OpenAiUsage usage) {
    }

    static Completion completion(ReplyHeader h, Generation g) {
        Choice choice = new Choice(0, String.join("", pieces(g)), null, ReplyHeader.FINISH_REASON);
        return new Completion(h.id(), OBJECT, h.created(), h.model(), List.of(choice), OpenAiUsage.of(g),
                g.kvTransferParams());
    }

    static List<Chunk> chunks(ReplyHeader h, Generation g, boolean includeUsage) {
        List<String> pieces = pieces(g);
        List<Chunk> chunks = new ArrayList<>();
        for (int i = 0; i < pieces.size(); i++) {
            String finish = i == pieces.size() - 1 ? ReplyHeader.FINISH_REASON : null;
            chunks.add(new Chunk(h.id(), OBJECT, h.created(), h.model(), List.of(new Choice(0, pieces.get(i), null, finish)),
                    null));
        }
        if (includeUsage) {
            chunks.add(new Chunk(h.id(), OBJECT, h.created(), h.model(), List.of(), OpenAiUsage.of(g)));
        }
        return chunks;
    }

    private static List<String> pieces(Generation g) {
        return g.words().stream().map(w -> " " + w).toList();
    }
}
