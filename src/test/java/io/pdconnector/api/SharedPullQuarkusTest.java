package io.pdconnector.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasSize;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.http.ContentType;
import io.restassured.response.ValidatableResponse;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The pull D's tensor-parallel ranks share, over HTTP (pd.tp-size=2, the reference engine, role both):
 * each rank asks with its {@code decode_rank} and gets the same answer, releases with
 * {@code ?decode_rank=}, and every refusal is a problem with its reason.
 */
@QuarkusTest
@TestProfile(SharedPullQuarkusTest.TwoRanks.class)
class SharedPullQuarkusTest {

    public static class TwoRanks implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("pd.tp-size", "2");
        }
    }

    private static final String PROMPT = "every rank of the decoder asks for the same pull of this prompt";

    private static Map<String, Object> prefill(String id) {
        return given().contentType(ContentType.JSON)
                .body(Map.of("request_id", id, "prompt", PROMPT,
                        "kv_transfer_params", Map.of("do_remote_decode", true)))
                .post("/v1/producer/prefill").then().statusCode(200).extract().path("kv_transfer_params");
    }

    private static ValidatableResponse pull(String id, Map<String, Object> params, Integer rank) {
        Map<String, Object> body = new HashMap<>(Map.of("request_id", id, "prompt", PROMPT,
                "kv_transfer_params", params));
        if (rank != null) {
            body.put("decode_rank", rank);
        }
        return given().contentType(ContentType.JSON).body(body).post("/v1/consumer/pull").then();
    }

    private static ValidatableResponse release(String id, Object rank) {
        return given().queryParam("decode_rank", rank).delete("/v1/consumer/requests/" + id).then();
    }

    private static void assertProblem(ValidatableResponse answer, int status, String reason, String detail) {
        answer.statusCode(status).contentType("application/problem+json")
                .body("reason", equalTo(reason))
                .body("type", equalTo("urn:pd-connector:problem:" + reason))
                .body("detail", containsString(detail));
    }

    @Test
    void bothRanksGetTheSameAnswerAndTheBlocksStayUntilTheLastRankReleases() throws Exception {
        Map<String, Object> params = prefill("tp-1");
        JsonNode first = json(pull("tp-1", params, 0).statusCode(200).body("ranks", hasSize(2)));
        JsonNode second = json(pull("tp-1", params, 1).statusCode(200));
        ((ObjectNode) first).remove("timings");
        ((ObjectNode) second).remove("timings");
        assertEquals(first, second, "the same answer for both ranks, timings aside");
        assertEquals("received", first.get("state").asText());

        release("tp-1", 0).statusCode(204);
        given().get("/v1/consumer/requests/tp-1").then().statusCode(200).body("state", equalTo("received"));
        assertProblem(release("tp-1", 0), 409, "rank-already-released",
                "decode rank 0 has already released request tp-1");
        release("tp-1", 1).statusCode(204);
        given().get("/v1/consumer/requests/tp-1").then().statusCode(404);
    }

    @Test
    void anAskThatCannotJoinIsRefusedWithItsReasonAndChangesNothing() {
        Map<String, Object> params = prefill("tp-2");
        assertProblem(pull("tp-2", params, 2), 400, "invalid-decode-rank", "pd.tp-size is 2");
        assertProblem(pull("tp-2", params, -1), 400, "invalid-decode-rank", "decode_rank -1");
        pull("tp-2", params, 0).statusCode(200);

        assertProblem(pull("tp-2", params, 0), 409, "rank-already-asked", "decode rank 0 has already asked");
        Map<String, Object> other = new HashMap<>(params);
        other.put("remote_lease_nonce", ((Number) params.get("remote_lease_nonce")).longValue() + 1);
        assertProblem(pull("tp-2", other, 1), 409, "pull-mismatch", "other kv_transfer_params or token ids");
        assertProblem(pull("tp-2", params, null), 409, "wrong-state", "already being pulled");
        assertProblem(release("tp-2", "one"), 400, "invalid-decode-rank", "not a whole number");
        assertProblem(release("tp-2", 2), 400, "invalid-decode-rank", "pd.tp-size is 2");

        pull("tp-2", params, 1).statusCode(200).body("state", equalTo("received"));
        release("tp-2", 0).statusCode(204);
        release("tp-2", 1).statusCode(204);
        given().get("/v1/consumer/requests/tp-2").then().statusCode(404);
    }

    @Test
    void aRankCannotJoinARoutersPull() {
        Map<String, Object> params = prefill("tp-3");
        pull("tp-3", params, null).statusCode(200);

        assertProblem(pull("tp-3", params, 1), 409, "not-rank-shared", "without decode_rank");
        assertProblem(release("tp-3", 1), 409, "not-rank-shared", "release it without decode_rank");

        given().delete("/v1/consumer/requests/tp-3").then().statusCode(204);
    }

    @Test
    void aRankAskingAfterADeclineGetsTheSameDecline() {
        Map<String, Object> forged = new HashMap<>(prefill("tp-4"));
        forged.put("remote_lease_nonce", ((Number) forged.get("remote_lease_nonce")).longValue() + 1);

        assertProblem(pull("tp-4", forged, 0), 409, "lease_mismatch", "the pull of tp-4 was declined");
        assertProblem(pull("tp-4", forged, 1), 409, "lease_mismatch", "the pull of tp-4 was declined");

        given().get("/v1/consumer/requests/tp-4").then().statusCode(404); // both ranks have the answer
        given().delete("/v1/producer/requests/tp-4").then().statusCode(204);
    }

    @Test
    void theDocumentNamesTheFieldAndTheQueryParameter() throws Exception {
        JsonNode doc = new ObjectMapper().readTree(given().queryParam("format", "json").get("/q/openapi").then()
                .statusCode(200).extract().asString());
        assertEquals(0, doc.at("/components/schemas/PullRequest/properties/decode_rank/minimum").asInt(-1));
        JsonNode parameters = doc.at("/paths/~1v1~1consumer~1requests~1{id}/delete/parameters");
        boolean named = false;
        for (JsonNode parameter : parameters) {
            named |= "decode_rank".equals(parameter.path("name").asText())
                    && "query".equals(parameter.path("in").asText())
                    && "integer".equals(parameter.at("/schema/type").asText());
        }
        assertEquals(true, named, parameters.toString());
    }

    private static JsonNode json(ValidatableResponse answer) throws Exception {
        return new ObjectMapper().readTree(answer.extract().asString());
    }
}
