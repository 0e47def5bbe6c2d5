package io.pdconnector.api.openai;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The JSON of {@code /v1/chat/completions} replies, in OpenAI's shape. The answer's words are joined
 * by single spaces; a stream opens with a delta naming the assistant role, then one delta per token.
 */
final class ChatBodies {

    static final String OBJECT = "chat.completion";
    static final String CHUNK_OBJECT = "chat.completion.chunk";
    private static final String ASSISTANT = "assistant";

    private ChatBodies() {
    }

    /** {@code kv_transfer_params} at the top level, where the routers read it from P's reply. */
    public record ChatCompletion(String id, String object, long created, String model, List<Choice> choices,
            OpenAiUsage usage,
            @JsonProperty("kv_transfer_params") @JsonInclude(JsonInclude.Include.NON_NULL) Map<String, Object> kvTransferParams) {
    }

    public record Choice(int index, Message message, Object logprobs, @JsonProperty("finish_reason") String finishReason) {
    }

    public record Message(String role, String content) {
    }

    public record Chunk(String id, String object, long created, String model, List<ChunkChoice> choices,
            OpenAiUsage usage) {
    }

    public record ChunkChoice(int index, Delta delta, Object logprobs, @JsonProperty("finish_reason") String finishReason) {
    }

    /** Only what changed: the role once at the start, then content. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Delta(String role, String content) {
    }

    static ChatCompletion completion(ReplyHeader h, Generation g) {
        Choice choice = new Choice(0, new Message(ASSISTANT, String.join("", pieces(g))), null, ReplyHeader.FINISH_REASON);
        return new ChatCompletion(h.id(), OBJECT, h.created(), h.model(), List.of(choice), OpenAiUsage.of(g),
                g.kvTransferParams());
    }

    static List<Chunk> chunks(ReplyHeader h, Generation g, boolean includeUsage) {
        List<String> pieces = pieces(g);
        List<Chunk> chunks = new ArrayList<>();
        chunks.add(chunk(h, new Delta(ASSISTANT, ""), null));
        for (int i = 0; i < pieces.size(); i++) {
            chunks.add(chunk(h, new Delta(null, pieces.get(i)), i == pieces.size() - 1 ? ReplyHeader.FINISH_REASON : null));
        }
        if (includeUsage) {
            chunks.add(new Chunk(h.id(), CHUNK_OBJECT, h.created(), h.model(), List.of(), OpenAiUsage.of(g)));
        }
        return chunks;
    }

    private static Chunk chunk(ReplyHeader h, Delta delta, String finishReason) {
        return new Chunk(h.id(), CHUNK_OBJECT, h.created(), h.model(), List.of(new ChunkChoice(0, delta, null, finishReason)),
                null);
    }

    private static List<String> pieces(Generation g) {
        List<String> pieces = new ArrayList<>(g.words().size());
        for (int i = 0; i < g.words().size(); i++) {
            pieces.add(i == 0 ? g.words().get(i) : " " + g.words().get(i));
        }
        return pieces;
    }
}
