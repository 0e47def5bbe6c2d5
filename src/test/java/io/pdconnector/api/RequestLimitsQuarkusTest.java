package io.pdconnector.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 12, item 5: every endpoint bounds its body (a small limit for JSON, the instance's KV size for
 * the upload) and the prompt's token limit is checked before the prompt is split or boxed. A refused
 * request is a problem with a reason and a sentence and leaves nothing held.
 */
@QuarkusTest
class RequestLimitsQuarkusTest {

    private static final String PROBLEM = "application/problem+json";
    private static final int MIB = 1 << 20;
    /** The default geometry, one rank; the %test pool has 64 blocks. */
    private static final int BLOCK_BYTES = 196_608;
    private static final int POOL_BYTES = 64 * BLOCK_BYTES;

    @AfterEach
    void nothingIsHeld() throws InterruptedException {
        NothingHeld.assertNothingHeld();
    }



    /** A syntactically valid JSON body of at least {@code bytes} bytes: the size alone must refuse it. */
    private static byte[] jsonOf(int bytes, String head) {
        StringBuilder b = new StringBuilder(bytes + 64).append('{').append(head).append("\"padding\": \"");
        b.append("x".repeat(bytes));
        return b.append("\"}").toString().getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aFiveMebibyteJsonBodyIs413OnEveryJsonEndpointAndHoldsNothing() {
        String prefill = "\"request_id\": \"big-1\", \"prompt\": \"a b\", "
                + "\"kv_transfer_params\": {\"do_remote_decode\": true}, ";
        Map<String, String> heads = Map.of(
                "/v1/producer/prefill", prefill,
                "/v1/producer/requests", "\"request_id\": \"big-2\", \"num_tokens\": 4, "
                        + "\"kv_transfer_params\": {\"do_remote_decode\": true}, ",
                "/v1/consumer/pull", "\"request_id\": \"big-3\", \"prompt\": \"a b\", \"kv_transfer_params\": {}, ",
                "/v1/completions", "\"prompt\": \"a b\", \"max_tokens\": 1, ",
                "/v1/chat/completions", "\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], ");
        for (var e : heads.entrySet()) {
            given().contentType(ContentType.JSON).body(jsonOf(5 * MIB, e.getValue())).post(e.getKey())
                    .then().statusCode(413).contentType(PROBLEM)
                    .body("type", equalTo("urn:pd-connector:problem:body-too-large"))
                    .body("reason", equalTo("body-too-large"))
                    .body("status", equalTo(413))
                    .body("detail", containsString("more than the 4194304 bytes"));
        }
        given().get("/v1/producer/requests/big-1").then().statusCode(404);
        given().get("/v1/producer/requests/big-2").then().statusCode(404);
    }

    @TestHTTPResource("/v1/producer/prefill")
    URI prefillUri;

    /** A body without Content-Length (chunked): the same limit cuts it off while it is read. */
    private int postChunked(byte[] body) throws IOException, InterruptedException {
        try (HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build()) {
            HttpRequest request = HttpRequest.newBuilder(prefillUri).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(body))).build();
            return client.send(request, HttpResponse.BodyHandlers.discarding()).statusCode();
        }
    }

    @Test
    void aChunkedJsonBodyIsCutOffAtTheSameLimit() throws IOException, InterruptedException {
        assertEquals(413, postChunked(jsonOf(5 * MIB, "\"request_id\": \"big-4\", \"prompt\": \"a b\", "
                + "\"kv_transfer_params\": {\"do_remote_decode\": true}, ")));
        given().get("/v1/producer/requests/big-4").then().statusCode(404);

        assertEquals(200, postChunked(("{\"request_id\": \"small-4\", \"prompt\": \"a b\", "
                + "\"kv_transfer_params\": {\"do_remote_decode\": true}}").getBytes(StandardCharsets.UTF_8)),
                "a chunked body under the limit is served");
        given().delete("/v1/producer/requests/small-4").then().statusCode(204);
    }

    @Test
    void theUploadTakesTheWholeKvOfTheInstanceButNotOneByteMore() {
        given().contentType(ContentType.JSON).body(Map.of("request_id", "up-1", "num_tokens", 64 * 16,
                "kv_transfer_params", Map.of("do_remote_decode", true)))
                .post("/v1/producer/requests").then().statusCode(201).body("upload_bytes", equalTo(POOL_BYTES));

        given().contentType(ContentType.BINARY).body(new byte[POOL_BYTES + 1]).put("/v1/producer/requests/up-1/kv")
                .then().statusCode(413).contentType(PROBLEM)
                .body("type", equalTo("urn:pd-connector:problem:body-too-large"))
                .body("detail", containsString("more than the " + POOL_BYTES + " bytes"));
        given().get("/v1/producer/requests/up-1").then().statusCode(200).body("state", equalTo("writing"));

        given().contentType(ContentType.BINARY).body(new byte[POOL_BYTES]).put("/v1/producer/requests/up-1/kv")
                .then().statusCode(204);
        given().delete("/v1/producer/requests/up-1").then().statusCode(204);
    }

    @Test
    void aTextPromptOfOneWordTooManyIsRefusedWithTheTokenLimitBeforeItIsSplit() {
        String words = "w ".repeat(PromptInput.MAX_TOKENS + 1);
        given().contentType(ContentType.JSON).body(Map.of("request_id", "tl-1", "prompt", words,
                "kv_transfer_params", Map.of("do_remote_decode", true)))
                .post("/v1/producer/prefill")
                .then().statusCode(400).contentType(PROBLEM)
                .body("type", equalTo("urn:pd-connector:problem:invalid-argument"))
                .body("detail", equalTo(tooLong()));
        given().contentType(ContentType.JSON).body(Map.of("prompt", words)).post("/v1/completions")
                .then().statusCode(400).body("detail", equalTo(tooLong()));
        given().contentType(ContentType.JSON)
                .body(Map.of("messages", java.util.List.of(Map.of("role", "user", "content", words))))
                .post("/v1/chat/completions")
                .then().statusCode(400).body("detail", equalTo(tooLong()));
    }

    @Test
    void tokenIdsOfOneTooManyAreRefusedWithTheTokenLimitBeforeTheyAreBoxed() {
        String ids = "[" + "1,".repeat(PromptInput.MAX_TOKENS) + "1]";
        given().contentType(ContentType.JSON).body("{\"request_id\": \"tl-2\", \"token_ids\": " + ids
                + ", \"kv_transfer_params\": {\"do_remote_decode\": true}}")
                .post("/v1/producer/prefill")
                .then().statusCode(400).contentType(PROBLEM)
                .body("type", equalTo("urn:pd-connector:problem:invalid-argument"))
                .body("detail", equalTo(tooLong()));
        given().contentType(ContentType.JSON).body("{\"prompt\": " + ids + "}").post("/v1/completions")
                .then().statusCode(400).body("detail", equalTo(tooLong()));
    }

    @Test
    void aNullTokenIdIsStillRefusedByName() {
        given().contentType(ContentType.JSON).body("{\"request_id\": \"tl-3\", \"token_ids\": [1, null], "
                + "\"kv_transfer_params\": {\"do_remote_decode\": true}}")
                .post("/v1/producer/prefill")
                .then().statusCode(400).contentType(PROBLEM).body("detail", containsString("token ids must be in"));
    }

    private static String tooLong() {
        return "the prompt has more than " + PromptInput.MAX_TOKENS + " tokens, the most one request may carry";
    }
}
