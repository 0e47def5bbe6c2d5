package io.pdconnector.api.openai;

import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasSize;
import static org.hamcrest.Matchers.matchesPattern;
import static org.hamcrest.Matchers.notNullValue;
import static org.hamcrest.Matchers.nullValue;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quarkus.test.junit.QuarkusTest;
import io.restassured.path.json.JsonPath;
import io.restassured.response.Response;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The OpenAI-style endpoints driven the way P/D routers drive vLLM ({@link ToyRouter}). The
 * correctness signal: the answer through P and D equals a local completion of the same prompt,
 * because D decodes from the bytes it pulled.
 */
@QuarkusTest
class OpenAiRouterQuarkusTest {

    private static final String COMPLETIONS = "/v1/completions";
    private static final String CHAT = "/v1/chat/completions";
    /** 20 words: two blocks of 16 tokens. */
    private static final String PROMPT = "the quick brown fox jumps over the lazy dog while a patient heron "
            + "waits by the river for the tide";

    @AfterEach
    void nothingIsHeldAfterwards() {
        ToyRouter.awaitIdle();
    }

    @Test
    void aCompletionThroughPAndDIsTheLocalCompletionOfThePrompt() {
        Map<String, Object> client = Map.of("model", "qwen-test", "prompt", PROMPT, "max_tokens", 12,
                "temperature", 0);
        Response p = ToyRouter.post(COMPLETIONS, "oa-1", ToyRouter.prefillLeg(client));
        p.then().statusCode(200)
                .header("X-Request-Id", "oa-1")
                .body("id", equalTo("cmpl-oa-1"))
                .body("object", equalTo("text_completion"))
                .body("model", equalTo("qwen-test"))
                .body("choices", hasSize(1))
                .body("choices[0].text", matchesPattern(" [a-z]+"))
                .body("choices[0].finish_reason", equalTo("length"))
                .body("usage.prompt_tokens", equalTo(20))
                .body("usage.completion_tokens", equalTo(1))
                .body("usage.total_tokens", equalTo(21))
                .body("kv_transfer_params.do_remote_prefill", equalTo(true))
                .body("kv_transfer_params.do_remote_decode", equalTo(false))
                .body("kv_transfer_params.remote_num_tokens", equalTo(20))
                .body("kv_transfer_params.remote_block_ids[0]", hasSize(2))
                .body("kv_transfer_params.remote_lease_nonce", notNullValue());

        Response d = ToyRouter.post(COMPLETIONS, "oa-1",
                ToyRouter.decodeLeg(client, p.jsonPath().getMap("kv_transfer_params")));
        d.then().statusCode(200)
                .header("X-Request-Id", "oa-1")
                .body("id", equalTo("cmpl-oa-1"))
                .body("object", equalTo("text_completion"))
                .body("model", equalTo("qwen-test"))
                .body("choices[0].finish_reason", equalTo("length"))
                .body("usage.prompt_tokens", equalTo(20))
                .body("usage.completion_tokens", equalTo(12))
                .body("usage.total_tokens", equalTo(32))
                .body("kv_transfer_params", nullValue());

        String local = text(ToyRouter.local(COMPLETIONS, client));
        String decoded = d.jsonPath().getString("choices[0].text");
        assertEquals(local, decoded, "D decoded from P's KV of the prompt");
        assertEquals(12, decoded.strip().split(" ").length);
        assertTrue(local.startsWith(p.jsonPath().getString("choices[0].text") + " "),
                "P's one token is the first token of the answer");
    }

    @Test
    void aTokenIdPromptRoutesToTheSameAnswerAsLocally() {
        List<Integer> ids = IntStream.range(0, 40).map(i -> 1000 + 37 * i).boxed().toList();
        Map<String, Object> client = Map.of("model", "m", "prompt", ids, "max_tokens", 5);
        Response d = ToyRouter.route(COMPLETIONS, "oa-2", client);
        d.then().statusCode(200).body("usage.prompt_tokens", equalTo(40)).body("usage.completion_tokens", equalTo(5));
        assertEquals(text(ToyRouter.local(COMPLETIONS, client)), text(d));
    }

    @Test
    void aDecodeLegWithATamperedNonceIsDeclinedWithLeaseMismatch() {
        Map<String, Object> client = Map.of("prompt", PROMPT, "max_tokens", 4);
        Map<String, Object> forged = new HashMap<>(ToyRouter.prefill(COMPLETIONS, "oa-3", client));
        forged.put("remote_lease_nonce", ((Number) forged.get("remote_lease_nonce")).longValue() + 1);

        ToyRouter.post(COMPLETIONS, "oa-3", ToyRouter.decodeLeg(client, forged))
                .then().statusCode(409)
                .contentType("application/problem+json")
                .body("type", equalTo("urn:pd-connector:problem:lease_mismatch"))
                .body("reason", equalTo("lease_mismatch"))
                .body("request_id", equalTo("oa-3"));
        // P still holds the real lease; a router that got a 409 aborts P's request (else it lapses with the lease).
        io.restassured.RestAssured.given().delete("/v1/producer/requests/oa-3").then().statusCode(204);
    }

    @Test
    void aDecodeAnswersFromTheKvItReadNotFromThePromptItWasSent() {
        Map<String, Object> clientA = Map.of("prompt", PROMPT, "max_tokens", 8);
        Map<String, Object> clientB = Map.of("prompt", PROMPT.replace("heron", "otter"), "max_tokens", 8);
        Map<String, Object> paramsOfA = ToyRouter.prefill(COMPLETIONS, "oa-4", clientA);

        // A router bug: D gets prompt B (same length) with A's params. The lease holds, so the pull is received.
        String decoded = text(ToyRouter.post(COMPLETIONS, "oa-4", ToyRouter.decodeLeg(clientB, paramsOfA))
                .then().statusCode(200).extract().response());

        assertEquals(text(ToyRouter.local(COMPLETIONS, clientA)), decoded, "the answer is A's: D used A's KV");
        assertNotEquals(text(ToyRouter.local(COMPLETIONS, clientB)), decoded);
    }

    @Test
    void aChatCompletionThroughPAndDIsTheLocalChatCompletion() {
        Map<String, Object> client = Map.of("model", "chat-test", "max_completion_tokens", 9, "messages", List.of(
                Map.of("role", "system", "content", "You are terse."),
                Map.of("role", "user", "content", List.of(Map.of("type", "text", "text", "Name three rivers in Europe")))));
        Response p = ToyRouter.post(CHAT, "oa-5", ToyRouter.prefillLeg(client));
        // <|system|> You are terse. <|user|> Name three rivers in Europe <|assistant|>
        p.then().statusCode(200)
                .body("object", equalTo("chat.completion"))
                .body("id", equalTo("chatcmpl-oa-5"))
                .body("choices[0].message.role", equalTo("assistant"))
                .body("choices[0].message.content", matchesPattern("[a-z]+"))
                .body("choices[0].finish_reason", equalTo("length"))
                .body("usage.prompt_tokens", equalTo(11))
                .body("usage.completion_tokens", equalTo(1))
                .body("kv_transfer_params.remote_lease_nonce", notNullValue());

        Response d = ToyRouter.post(CHAT, "oa-5", ToyRouter.decodeLeg(client, p.jsonPath().getMap("kv_transfer_params")));
        d.then().statusCode(200)
                .header("X-Request-Id", "oa-5")
                .body("model", equalTo("chat-test"))
                .body("usage.prompt_tokens", equalTo(11))
                .body("usage.completion_tokens", equalTo(9))
                .body("usage.total_tokens", equalTo(20));
        String content = d.jsonPath().getString("choices[0].message.content");
        assertEquals(ToyRouter.local(CHAT, client).jsonPath().getString("choices[0].message.content"), content);
        assertEquals(9, content.split(" ").length);
    }

    @Test
    void aStreamedDecodeLegIsWellFormedChunksEndingInDoneWithTheNonStreamedText() {
        Map<String, Object> client = Map.of("model", "m", "prompt", PROMPT, "max_tokens", 6, "stream", true,
                "stream_options", Map.of("include_usage", true));
        Response d = ToyRouter.route(COMPLETIONS, "oa-6", client);
        d.then().statusCode(200).contentType(startsWith("text/event-stream")).header("X-Request-Id", "oa-6");
        List<JsonPath> chunks = SseEvents.parse(d.asString());

        assertEquals(7, chunks.size(), "six tokens and the usage chunk");
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < 6; i++) {
            JsonPath c = chunks.get(i);
            assertEquals("text_completion", c.getString("object"));
            assertEquals("cmpl-oa-6", c.getString("id"));
            assertEquals(i == 5 ? "length" : null, c.getString("choices[0].finish_reason"));
            text.append(c.getString("choices[0].text"));
        }
        JsonPath usage = chunks.get(6);
        assertEquals(List.of(), usage.getList("choices"));
        assertEquals(Map.of("prompt_tokens", 20, "completion_tokens", 6, "total_tokens", 26), usage.getMap("usage"));

        Map<String, Object> plain = new HashMap<>(client);
        plain.remove("stream");
        plain.remove("stream_options");
        assertEquals(text(ToyRouter.local(COMPLETIONS, plain)), text.toString());
    }

    @Test
    void aStreamedChatDecodeOpensWithTheRoleAndCarriesTheSameContent() {
        Map<String, Object> client = Map.of("max_tokens", 4, "stream", true,
                "messages", List.of(Map.of("role", "user", "content", "Say four words")));
        Response d = ToyRouter.route(CHAT, "oa-7", client);
        d.then().statusCode(200).contentType(startsWith("text/event-stream"));
        List<JsonPath> chunks = SseEvents.parse(d.asString());

        assertEquals(5, chunks.size(), "the role delta and four tokens");
        assertEquals("assistant", chunks.getFirst().getString("choices[0].delta.role"));
        StringBuilder content = new StringBuilder();
        for (JsonPath c : chunks) {
            assertEquals("chat.completion.chunk", c.getString("object"));
            content.append(c.getString("choices[0].delta.content"));
        }
        assertEquals("length", chunks.getLast().getString("choices[0].finish_reason"));
        Map<String, Object> plain = new HashMap<>(client);
        plain.remove("stream");
        assertEquals(ToyRouter.local(CHAT, plain).jsonPath().getString("choices[0].message.content"), content.toString());
    }

    @Test
    void withoutXRequestIdAFreshIdIsMadeEchoedAndUsedAsTheCompletionId() {
        Response r = ToyRouter.local(COMPLETIONS, Map.of("prompt", "hello there", "max_tokens", 2));
        r.then().statusCode(200)
                .header("X-Request-Id", matchesPattern("[0-9a-f-]{36}"))
                .body("model", equalTo("pd-connector-reference"))
                .body("usage.prompt_tokens", equalTo(2))
                .body("usage.completion_tokens", equalTo(2))
                .body("usage.total_tokens", equalTo(4));
        assertEquals("cmpl-" + r.header("X-Request-Id"), r.jsonPath().getString("id"));
    }

    @Test
    void aLocalCompletionDefaultsToSixteenTokensAndDependsOnThePrompt() {
        String a = text(ToyRouter.local(COMPLETIONS, Map.of("prompt", "one two three")));
        String b = text(ToyRouter.local(COMPLETIONS, Map.of("prompt", "one two four")));
        assertEquals(16, a.strip().split(" ").length);
        assertNotEquals(a, b);
    }

    private static String text(Response r) {
        assertEquals(200, r.statusCode(), r::asString);
        return r.jsonPath().getString("choices[0].text");
    }
}
