package io.pdconnector.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;

import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Every way a router can get a request wrong gets a 4xx problem with a stable type and a sentence,
 * and leaves the instance as it was (checked by pulling a real prefill afterwards in each test).
 */
@QuarkusTest
class BadInputQuarkusTest {

    private static final String PROBLEM = "application/problem+json";

    @Test
    void prefillWithoutRequestIdIsAValidationProblemNamingTheField() {
        given().contentType(ContentType.JSON)
                .body(Map.of("prompt", "a b c", "kv_transfer_params", Map.of("do_remote_decode", true)))
                .post("/v1/producer/prefill")
                .then().statusCode(400).contentType(PROBLEM)
                .body("type", equalTo("urn:pd-connector:problem:validation-failed"))
                .body("violations.field", hasItem("request_id"));
    }

    @Test
    void prefillWithARequestIdHoldingASeparatorIsRejected() {
        given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "a:b", "prompt", "x", "kv_transfer_params", Map.of("do_remote_decode", true)))
                .post("/v1/producer/prefill")
                .then().statusCode(400).contentType(PROBLEM)
                .body("type", equalTo("urn:pd-connector:problem:validation-failed"))
                .body("violations.field", hasItem("request_id"));
    }

    @Test
    void prefillWithBothOrNeitherPromptFormIsRejected() {
        given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "b-1", "prompt", "x", "token_ids", List.of(1),
                        "kv_transfer_params", Map.of("do_remote_decode", true)))
                .post("/v1/producer/prefill")
                .then().statusCode(400).contentType(PROBLEM)
                .body("type", equalTo("urn:pd-connector:problem:invalid-argument"))
                .body("detail", containsString("exactly one of prompt and token_ids"));
        given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "b-1", "kv_transfer_params", Map.of("do_remote_decode", true)))
                .post("/v1/producer/prefill")
                .then().statusCode(400).body("type", equalTo("urn:pd-connector:problem:invalid-argument"));
    }

    @Test
    void prefillWithNegativeOrOutOfVocabularyTokensIsRejected() {
        for (int bad : new int[] {-1, 151_936}) {
            given().contentType(ContentType.JSON)
                    .body(Map.of("request_id", "b-2", "token_ids", List.of(1, bad),
                            "kv_transfer_params", Map.of("do_remote_decode", true)))
                    .post("/v1/producer/prefill")
                    .then().statusCode(400).body("detail", containsString("token ids must be in"));
        }
    }

    @Test
    void aPullsTokenIdsAreBoundedByTheVocabularyItNamesAndByTheReferenceEnginesWhenItComparesWithIt() {
        Map<String, Object> params = prefill("b-vocab");
        record Bad(List<Integer> ids, Integer vocabSize, String query, String detail) {
        }
        for (Bad bad : List.of(
                new Bad(List.of(1, 2, 151_936), null, "", "[0, 151936)"),
                new Bad(List.of(1, 2, 1_000), 1_000, "", "the vocab_size the pull names"),
                new Bad(List.of(1, 2, 3), 201_088, "?matches_reference=true", "reference engine, whose vocabulary"))) {
            Map<String, Object> body = new HashMap<>(Map.of("request_id", "b-vocab", "token_ids", bad.ids(),
                    "kv_transfer_params", params));
            if (bad.vocabSize() != null) {
                body.put("vocab_size", bad.vocabSize());
            }
            given().contentType(ContentType.JSON).body(body).post("/v1/consumer/pull" + bad.query())
                    .then().statusCode(400).contentType(PROBLEM)
                    .body("type", equalTo("urn:pd-connector:problem:invalid-argument"))
                    .body("detail", containsString(bad.detail()));
        }
        given().contentType(ContentType.JSON).body(Map.of("request_id", "b-vocab", "token_ids", List.of(1),
                "kv_transfer_params", params, "vocab_size", 0)).post("/v1/consumer/pull")
                .then().statusCode(400).body("violations.field", hasItem("vocab_size"));
        pullReceived("b-vocab", params);
    }

    @Test
    void prefillWithoutDoRemoteDecodeIsRejected() {
        given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "b-3", "prompt", "x", "kv_transfer_params", Map.of()))
                .post("/v1/producer/prefill")
                .then().statusCode(400).contentType(PROBLEM)
                .body("type", equalTo("urn:pd-connector:problem:invalid-kv-transfer-params"))
                .body("detail", containsString("do_remote_decode"));
    }

    @Test
    void malformedJsonIsAProblemNotAStackTrace() {
        given().contentType(ContentType.JSON).body("{\"request_id\": ")
                .post("/v1/producer/prefill")
                .then().statusCode(400).contentType(PROBLEM)
                .body("status", equalTo(400));
    }

    @Test
    void pullParamsThatAreWrongGetAClearMessageEach() {
        Map<String, Object> good = prefill("b-4");
        Map<String, String> cases = Map.of(
                "remote_block_ids", "negative",
                "remote_lease_nonce", "remote_lease_nonce must be in [1, 2^53)",
                "do_remote_prefill", "do_remote_prefill must be true",
                "tp_size", "tp_size must be in",
                "transfer_mode", "transfer_mode must be \"pull\"");
        Map<String, Object> badValues = Map.of(
                "remote_block_ids", List.of(List.of(-3)),
                "remote_lease_nonce", 0,
                "do_remote_prefill", false,
                "tp_size", 0,
                "transfer_mode", "push");
        for (var c : cases.entrySet()) {
            Map<String, Object> params = new HashMap<>(good);
            params.put(c.getKey(), badValues.get(c.getKey()));
            given().contentType(ContentType.JSON)
                    .body(Map.of("request_id", "b-4", "prompt", "one two three", "kv_transfer_params", params))
                    .post("/v1/consumer/pull")
                    .then().statusCode(400).contentType(PROBLEM)
                    .body("type", equalTo("urn:pd-connector:problem:invalid-kv-transfer-params"))
                    .body("detail", containsString(c.getValue()));
        }
        pullReceived("b-4", good);
    }

    @Test
    void aNonceAtOrAbove2To53IsRejected() {
        Map<String, Object> good = prefill("b-5");
        Map<String, Object> params = new HashMap<>(good);
        params.put("remote_lease_nonce", 1L << 53);
        given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "b-5", "prompt", "one two three", "kv_transfer_params", params))
                .post("/v1/consumer/pull")
                .then().statusCode(400).body("detail", containsString("2^53"));
        pullReceived("b-5", good);
    }

    @Test
    void anUnregisteredEngineIsAnUnknownPeerProblemWithoutAnAddressOrWithOne() {
        Map<String, Object> params = new HashMap<>(prefill("b-6"));
        params.put("remote_engine_id", "nobody");
        params.remove("remote_host");
        given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "b-6x", "prompt", "one two three", "kv_transfer_params", params))
                .post("/v1/consumer/pull")
                .then().statusCode(409).contentType(PROBLEM)
                .body("type", equalTo("urn:pd-connector:problem:unknown_peer"))
                .body("detail", containsString("nobody"));
        params.put("remote_host", "127.0.0.1");
        params.put("remote_port", 1);
        given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "b-6x", "prompt", "one two three", "kv_transfer_params", params))
                .post("/v1/consumer/pull")
                .then().statusCode(409).body("reason", equalTo("unknown_peer"));
        given().delete("/v1/producer/requests/b-6").then().statusCode(204);
    }

    @Test
    void unknownRoutesAndMethodsAreProblemsToo() {
        given().get("/v1/producer/prefill").then().statusCode(405).contentType(PROBLEM);
        given().contentType(ContentType.TEXT).body("x").post("/v1/producer/prefill").then().statusCode(415)
                .contentType(PROBLEM);
    }

    static Map<String, Object> prefill(String id) {
        return given().contentType(ContentType.JSON)
                .body(Map.of("request_id", id, "prompt", "one two three",
                        "kv_transfer_params", Map.of("do_remote_decode", true)))
                .post("/v1/producer/prefill")
                .then().statusCode(200).extract().path("kv_transfer_params");
    }

    /** The rejected attempts changed nothing: the same params still pull. */
    static void pullReceived(String id, Map<String, Object> params) {
        given().contentType(ContentType.JSON)
                .body(Map.of("request_id", id, "prompt", "one two three", "kv_transfer_params", params))
                .post("/v1/consumer/pull")
                .then().statusCode(200).body("state", equalTo("received"));
        given().delete("/v1/consumer/requests/" + id).then().statusCode(204);
    }
}
