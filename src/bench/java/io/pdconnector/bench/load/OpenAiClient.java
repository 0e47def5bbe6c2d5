package io.pdconnector.bench.load;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URI;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The OpenAI-style facade (docs/openai-facade.md), as vLLM's toy proxy drives it: the P leg is
 * {@code POST /v1/completions} with {@code max_tokens} 1 and placeholder {@code kv_transfer_params}
 * ({@code do_remote_decode: true}); the D leg sends the same prompt with P's top-level
 * {@code kv_transfer_params} forwarded verbatim and decodes {@code --max-tokens} tokens, releasing D's
 * blocks itself (so there is no release leg). Both legs carry the request id as {@code X-Request-Id}.
 * A declined D leg aborts P's request. The facade does not say whether D recomputed, so every 200
 * counts as received; its bytes are P's blocks times the block size.
 */
public final class OpenAiClient implements LoadClient {

    static final String MODEL = "pd-connector-reference";

    private final Http http;
    private final URI producer;
    private final URI consumer;
    private final int maxTokens;
    private final long blockBytes;

    /** {@code blockBytes}: one block over all of P's ranks. */
    public OpenAiClient(Http http, URI producer, URI consumer, int maxTokens, long blockBytes) {
        this.http = http;
        this.producer = producer;
        this.consumer = consumer;
        this.maxTokens = maxTokens;
        this.blockBytes = blockBytes;
    }

    @Override
    public Prefilled prefill(Workload.Request request) {
        long t0 = System.nanoTime();
        try {
            Map<String, Object> placeholders = new LinkedHashMap<>();
            placeholders.put("do_remote_decode", true);
            placeholders.put("do_remote_prefill", false);
            placeholders.put("remote_engine_id", null);
            placeholders.put("remote_block_ids", null);
            placeholders.put("remote_host", null);
            placeholders.put("remote_port", null);
            Http.Reply p = http.post(producer, "/v1/completions", Map.of("model", MODEL, "prompt", request.tokens(),
                    "max_tokens", 1, "stream", false, "kv_transfer_params", placeholders), "X-Request-Id",
                    request.id());
            long t = System.nanoTime() - t0;
            if (p.status() != 200) {
                return new Prefilled(request, null, t, Result.failed("http:" + p.status(), t, -1, -1, null));
            }
            return new Prefilled(request, p.json().path("kv_transfer_params"), t, null);
        } catch (Exception e) {
            NativeClient.interruptedAgain(e);
            long t = System.nanoTime() - t0;
            return new Prefilled(request, null, t, Result.failed(Http.errorKind(e), t, -1, -1,
                    abortProducer(request.id())));
        }
    }

    @Override
    public Result finish(Prefilled prefilled) {
        String id = prefilled.request().id();
        JsonNode params = prefilled.params();
        long prefillNs = prefilled.prefillNs();
        long t1 = System.nanoTime();
        try {
            Http.Reply d = http.post(consumer, "/v1/completions", Map.of("model", MODEL, "prompt",
                    prefilled.request().tokens(), "max_tokens", maxTokens, "kv_transfer_params", params),
                    "X-Request-Id", id);
            long pull = System.nanoTime() - t1;
            if (d.status() == 200) {
                long blocks = 0;
                for (JsonNode rank : params.path("remote_block_ids")) {
                    blocks = Math.max(blocks, rank.size());
                }
                return new Result(Result.RECEIVED, prefillNs, pull, -1, prefillNs + pull, blocks * blockBytes, -1,
                        Map.of(), null);
            }
            String outcome = d.status() == 409 ? "declined:" + d.reason() : "http:" + d.status();
            return Result.failed(outcome, prefillNs, pull, -1, abortProducer(id));
        } catch (Exception e) {
            NativeClient.interruptedAgain(e);
            return Result.failed(Http.errorKind(e), prefillNs, System.nanoTime() - t1, -1, abortProducer(id));
        }
    }

    private String abortProducer(String id) {
        return NativeClient.deleteIgnoringUnknown(http, producer, "/v1/producer/requests/" + id);
    }
}
