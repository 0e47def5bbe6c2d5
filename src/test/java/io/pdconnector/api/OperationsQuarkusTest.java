package io.pdconnector.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import java.util.Map;
import java.util.regex.Matcher;
import org.junit.jupiter.api.Test;

/** What an operator checks: health, status, metrics, OpenAPI, and the KV read-out. */
@QuarkusTest
class OperationsQuarkusTest {

    @Test
    void livenessAndReadinessNameTheirChecks() {
        given().get("/q/health/live").then().statusCode(200)
                .body("checks.name", hasItem("step-loops"));
        given().get("/q/health/ready").then().statusCode(200)
                .body("checks.name", hasItem("connector"))
                .body("checks.find { it.name == 'connector' }.data.role", equalTo("both"));
    }

    @Test
    void aDeclinedPullMovesTheLeaseCheckFailureCounterByExactlyOne() {
        double before = metric("nixl_num_lease_check_failures_total");
        double declinesBefore = metric("pd_pull_declines_total{reason=\"lease_mismatch\"}");
        Map<String, Object> params = BadInputQuarkusTest.prefill("m-1");
        var forged = new java.util.HashMap<>(params);
        forged.put("remote_lease_nonce", ((Number) params.get("remote_lease_nonce")).longValue() + 7);
        given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "m-1", "prompt", "one two three", "kv_transfer_params", forged))
                .post("/v1/consumer/pull").then().statusCode(409);

        assertEquals(before + 1, metric("nixl_num_lease_check_failures_total"));
        assertEquals(declinesBefore + 1, metric("pd_pull_declines_total{reason=\"lease_mismatch\"}"));
        given().delete("/v1/producer/requests/m-1").then().statusCode(204);
    }

    @Test
    void aReceivedPullIsTimedCountedAndItsKvCanBeReadOnceThenReleased() {
        double reads = metric("nixl_xfer_time_seconds_count");
        Map<String, Object> params = BadInputQuarkusTest.prefill("m-2");
        String checksum = given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "m-2", "prompt", "one two three", "kv_transfer_params", params))
                .post("/v1/consumer/pull?matches_reference=true&kv_checksum=true").then().statusCode(200)
                .body("matches_reference", equalTo(true))
                .extract().path("kv_checksum");
        assertTrue(metric("nixl_xfer_time_seconds_count") > reads, "the block READ was timed");

        byte[] kv = given().get("/v1/consumer/requests/m-2/kv").then().statusCode(200)
                .header("X-KV-Checksum", equalTo(checksum))
                .extract().asByteArray();
        assertEquals(196_608, kv.length, "one block of the default geometry");
        given().get("/v1/consumer/requests/m-2/kv").then().statusCode(404)
                .body("type", equalTo("urn:pd-connector:problem:unknown-request"));
    }

    @Test
    void statusShowsHeldBlocksAndSlotsAndReturnsToIdle() {
        BadInputQuarkusTest.prefill("m-3");
        given().get("/v1/status").then().statusCode(200)
                .body("engine_id", equalTo("pd-test"))
                .body("transfer_engine", equalTo("nixl"))
                .body("producer.leases_live", equalTo(1))
                .body("producer.slots_in_use", equalTo(1));
        given().delete("/v1/producer/requests/m-3").then().statusCode(204);
        given().delete("/v1/producer/requests/m-3").then().statusCode(404);
    }

    @Test
    void openApiDocumentsTheRouterEndpoints() {
        given().get("/q/openapi?format=json").then().statusCode(200)
                .body(containsString("/v1/producer/prefill"))
                .body(containsString("/v1/consumer/pull"))
                .body(containsString("/v1/producer/requests/{id}/finish"))
                .body(containsString("/v1/consumer/requests/{id}"));
    }

    @Test
    void theTrustAndQuarantineCountersAreExported() {
        for (String series : java.util.List.of("pd_notifications_refused_total{reason=\"nonce\"}",
                "pd_notifications_refused_total{reason=\"consumers\"}", "pd_leases_max_lifetime_total",
                "pd_reads_quarantined_total", "pd_blocks_quarantined_total", "pd_blocks_in_quarantine")) {
            assertTrue(metric(series) >= 0, series);
        }
    }

    static double metric(String series) {
        String body = given().get("/q/metrics").then().statusCode(200).extract().asString();
        Matcher m = java.util.regex.Pattern.compile("(?m)^" + java.util.regex.Pattern.quote(series)
                .replace("\\{", "{") + "(?:\\{[^}]*\\})?\\s+([0-9.eE+-]+)$").matcher(body);
        double sum = 0;
        boolean found = false;
        while (m.find()) {
            sum += Double.parseDouble(m.group(1));
            found = true;
        }
        assertTrue(found, "metric " + series + " is exported");
        return sum;
    }
}
