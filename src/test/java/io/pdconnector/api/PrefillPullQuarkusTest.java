package io.pdconnector.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
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
import java.util.Set;
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

        Map<String, Number> timings = given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "q-1", "prompt", "the quick brown fox jumps over the lazy dog again and again",
                        "kv_transfer_params", params))
                .post("/v1/consumer/pull?kv_checksum=true")
                .then().statusCode(200)
                .body("state", equalTo("received"))
                .body("bytes", greaterThan(0))
                .body("kv_checksum", startsWith("crc32c:"))
                .body("$", not(hasKey("matches_reference"))) // asked for with ?matches_reference=true
                .extract().path("timings");
        assertWhereThePullTimeWent(timings, true);

        given().delete("/v1/consumer/requests/q-1").then().statusCode(204);
    }

    /** Every phase of a verified pull that read blocks is there, and they add up to {@code pull_ms}. */
    private static void assertWhereThePullTimeWent(Map<String, Number> timings, boolean checksum) {
        List<String> phases = List.of("to_loop_ms", "queued_ms", "post_ms", "read_ms", "slot_check_ms", "to_reply_ms");
        Set<String> expected = new java.util.HashSet<>(phases);
        expected.add("pull_ms");
        if (checksum) {
            expected.add("checksum_ms");
        }
        assertEquals(expected, timings.keySet(), "timings: " + timings);
        double sum = 0;
        for (String phase : phases) {
            double ms = timings.get(phase).doubleValue();
            assertTrue(ms >= 0, phase + " is negative: " + timings);
            sum += ms;
        }
        assertEquals(timings.get("pull_ms").doubleValue(), sum, 1e-3, "the phases add up to pull_ms: " + timings);
    }

    /**
     * Issue 23: an engine beside D reads a pull's KV in place. The reply says where: D's blocks
     * {@code block_ids} in each rank's KV file ({@code pd.kv.shm-dir}/pd-&lt;engine&gt;-d&lt;rank&gt;.kv),
     * and those bytes are what {@code GET .../kv} returns; no checksum is computed unless asked for.
     */
    @Test
    void aPullSaysWhereItsBlocksAreInDsKvFileAndComputesNoChecksumUnlessAsked() throws Exception {
        String prompt = "a pull read in place from the decoder's own shared file of received blocks";
        Map<String, Object> params = given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "q-4", "prompt", prompt, "kv_transfer_params", Map.of("do_remote_decode", true)))
                .post("/v1/producer/prefill").then().statusCode(200).extract().path("kv_transfer_params");

        io.restassured.path.json.JsonPath pulled = given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "q-4", "prompt", prompt, "kv_transfer_params", params))
                .post("/v1/consumer/pull")
                .then().statusCode(200)
                .body("state", equalTo("received"))
                .body("$", not(hasKey("kv_checksum")))
                .body("$", not(hasKey("matches_reference")))
                .body("block_bytes", equalTo(196_608))
                .body("ranks", hasSize(1))
                .body("ranks[0].rank", equalTo(0))
                .body("ranks[0].kv_file", org.hamcrest.Matchers.endsWith("target/pd-shm-test/pd-pd-test-d0.kv"))
                .body("ranks[0].region_bytes", equalTo(64 * 196_608))
                .extract().jsonPath();
        assertWhereThePullTimeWent(pulled.getMap("timings"), false);
        List<Integer> blocks = pulled.getList("block_ids", Integer.class);
        java.nio.file.Path file = java.nio.file.Path.of(pulled.getString("ranks[0].kv_file"));
        byte[] inFile = new byte[blocks.size() * 196_608];
        try (java.nio.channels.FileChannel channel = java.nio.channels.FileChannel.open(file)) {
            for (int i = 0; i < blocks.size(); i++) {
                java.nio.ByteBuffer slice = java.nio.ByteBuffer.wrap(inFile, i * 196_608, 196_608);
                channel.read(slice, (long) blocks.get(i) * 196_608);
            }
        }
        byte[] readOut = given().get("/v1/consumer/requests/q-4/kv").then().statusCode(200).extract().asByteArray();
        org.junit.jupiter.api.Assertions.assertArrayEquals(readOut, inFile, "D's file holds the pulled KV at block_ids");
        assertTrue(java.util.stream.IntStream.range(0, inFile.length).anyMatch(i -> inFile[i] != 0),
                "the reference engine's KV, not zeroed blocks");
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

    /**
     * vLLM PR #56640 over the API: a decoder whose prefix cache holds the whole prompt pulls with
     * {@code remote_block_ids: [[]]}; the pull is received (its lease checked by the slot READ), holds
     * no KV, and P releases its blocks at D's notification, long before its lease would expire.
     */
    @Test
    void aPullWithNothingToReadIsReceivedAndReleasesTheProducersLease() throws InterruptedException {
        Map<String, Object> params = given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "q-3", "token_ids", List.of(7, 8, 9, 10, 11),
                        "kv_transfer_params", Map.of("do_remote_decode", true)))
                .post("/v1/producer/prefill")
                .then().statusCode(200).extract().path("kv_transfer_params");
        var nothingToRead = new java.util.HashMap<>(params);
        nothingToRead.put("remote_block_ids", List.of(List.of()));

        given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "q-3", "token_ids", List.of(7, 8, 9, 10, 11),
                        "kv_transfer_params", nothingToRead))
                .post("/v1/consumer/pull")
                .then().statusCode(200)
                .body("state", equalTo("received"))
                .body("bytes", equalTo(0));
        given().get("/v1/consumer/requests/q-3/kv").then().statusCode(200).body(equalTo("")); // and released
        given().get("/v1/consumer/requests/q-3").then().statusCode(404);

        int status = 200;
        for (int i = 0; i < 100 && status == 200; i++) { // P releases at D's notification: well within 5 s
            status = given().get("/v1/producer/requests/q-3").statusCode();
            if (status == 200) {
                Thread.sleep(50);
            }
        }
        org.junit.jupiter.api.Assertions.assertEquals(404, status, "P released q-3 at D's notification");
    }

    /**
     * P out of blocks because leases (here an engine's reservation of the whole pool) hold every one: both ways a
     * router prefills, native and OpenAI, are answered 503 no-free-blocks with {@code Retry-After: 1}, a capacity
     * answer to retry, not a failure; once the lease ends the same prefill is served.
     */
    @Test
    void aPrefillWhileLeasesHoldEveryBlockIs503WithRetryAfterAndIsServedOnceALeaseEnds() {
        given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "q-all", "num_tokens", 64 * 16,
                        "kv_transfer_params", Map.of("do_remote_decode", true)))
                .post("/v1/producer/requests").then().statusCode(201).body("block_ids", hasSize(64));
        Map<String, Object> prefill = Map.of("request_id", "q-full", "token_ids", List.of(1, 2, 3),
                "kv_transfer_params", Map.of("do_remote_decode", true));
        Map<String, Object> completion = Map.of("model", "qwen-test", "prompt", "one two three", "max_tokens", 1,
                "kv_transfer_params", Map.of("do_remote_decode", true));
        try {
            given().contentType(ContentType.JSON).body(prefill).post("/v1/producer/prefill")
                    .then().statusCode(503).contentType("application/problem+json").header("Retry-After", "1")
                    .body("reason", equalTo("no-free-blocks"))
                    .body("detail", startsWith("no free KV blocks for 3 tokens (0 of 64 free)"));
            given().contentType(ContentType.JSON).header("X-Request-Id", "q-full-oa").body(completion)
                    .post("/v1/completions")
                    .then().statusCode(503).header("Retry-After", "1").body("reason", equalTo("no-free-blocks"));
        } finally {
            given().delete("/v1/producer/requests/q-all").then().statusCode(204);
        }
        given().contentType(ContentType.JSON).body(prefill).post("/v1/producer/prefill").then().statusCode(200);
        given().delete("/v1/producer/requests/q-full").then().statusCode(204);
    }
}
