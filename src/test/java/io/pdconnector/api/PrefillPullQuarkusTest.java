package io.pdconnector.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.greaterThan;
import static org.hamcrest.Matchers.hasKey;
import static org.hamcrest.Matchers.hasSize;
import static org.hamcrest.Matchers.not;
import static org.hamcrest.Matchers.notNullValue;
import static org.hamcrest.Matchers.startsWith;

import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Prefill then pull through the HTTP API of one instance in role both, on real NIXL. */
@QuarkusTest
class PrefillPullQuarkusTest {

    @Test
    void prefillReturnsVllmParamsWithALeaseAndThePullReceivesThem() {
        Map<String, Object> params = given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "q-1", "prompt", "the quick brown fox jumps over the lazy dog again and again",
                        "kv_transfer_params", Map.of("do_remote_decode", true)))
                .post("/v1/producer/prefill")
                .then().statusCode(200)
                .body("kv_transfer_params.do_remote_prefill", equalTo(true))
                .body("kv_transfer_params.do_remote_decode", equalTo(false))
                .body("kv_transfer_params.remote_engine_id", equalTo("pd-test"))
                .body("kv_transfer_params.transfer_mode", equalTo("pull"))
                .body("kv_transfer_params.remote_block_ids", hasSize(1))
                .body("kv_transfer_params.remote_lease_nonce", notNullValue())
                .extract().path("kv_transfer_params");

        given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "q-1", "prompt", "the quick brown fox jumps over the lazy dog again and again",
                        "kv_transfer_params", params))
                .post("/v1/consumer/pull")
                .then().statusCode(200)
                .body("state", equalTo("received"))
                .body("bytes", greaterThan(0))
                .body("kv_checksum", startsWith("crc32c:"))
                .body("$", not(hasKey("matches_reference"))); // asked for with ?matches_reference=true

        given().delete("/v1/consumer/requests/q-1").then().statusCode(204);
    }

    @Test
    void aPullWithAForgedNonceIsDeclinedWithLeaseMismatch() {
        Map<String, Object> params = given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "q-2", "token_ids", List.of(1, 2, 3, 4, 5),
                        "kv_transfer_params", Map.of("do_remote_decode", true)))
                .post("/v1/producer/prefill")
                .then().statusCode(200).extract().path("kv_transfer_params");
        var forged = new java.util.HashMap<>(params);
        forged.put("remote_lease_nonce", ((Number) params.get("remote_lease_nonce")).longValue() + 1);

        given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "q-2", "token_ids", List.of(1, 2, 3, 4, 5), "kv_transfer_params", forged))
                .post("/v1/consumer/pull")
                .then().statusCode(409)
                .contentType("application/problem+json")
                .body("type", equalTo("urn:pd-connector:problem:lease_mismatch"))
                .body("reason", equalTo("lease_mismatch"))
                .body("request_id", equalTo("q-2"));
        given().delete("/v1/producer/requests/q-2").then().statusCode(204);
    }
}
