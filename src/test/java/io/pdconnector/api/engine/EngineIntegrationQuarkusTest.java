package io.pdconnector.api.engine;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.endsWith;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.greaterThan;
import static org.hamcrest.Matchers.hasItem;
import static org.hamcrest.Matchers.hasSize;
import static org.hamcrest.Matchers.lessThanOrEqualTo;
import static org.hamcrest.Matchers.notNullValue;
import static org.hamcrest.Matchers.nullValue;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.pdconnector.api.NothingHeld;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.path.json.JsonPath;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * An engine's request through the HTTP API of one instance in role both, on real NIXL: reserve,
 * write the KV (through P's shared file, or by upload), finish, pull on D, read D's KV back; and
 * every way an engine can get it wrong. After each test nothing is held.
 */
@QuarkusTest
class EngineIntegrationQuarkusTest {

    private static final String PROBLEM = "application/problem+json";
    private static final int BLOCK_BYTES = 196_608; // the default geometry, one rank

    @AfterEach
    void nothingIsHeld() throws InterruptedException {
        NothingHeld.assertNothingHeld();
    }

    private static JsonPath instanceStatus() {
        return given().get("/v1/status").then().statusCode(200).extract().jsonPath();
    }


    @Test
    void anEngineWritesThroughTheSharedFileFinishesAndDReadsExactlyThoseBytes() throws IOException {
        JsonPath r = given().contentType(ContentType.JSON).body(reserveBody("ei-1", 40))
                .post("/v1/producer/requests")
                .then().statusCode(201)
                .header("Location", endsWith("/v1/producer/requests/ei-1"))
                .body("request_id", equalTo("ei-1"))
                .body("num_tokens", equalTo(40))
                .body("block_ids", hasSize(3))
                .body("has_lease", equalTo(true))
                .body("block_bytes", equalTo(BLOCK_BYTES))
                .body("upload_bytes", equalTo(3 * BLOCK_BYTES))
                .body("ranks", hasSize(1))
                .body("ranks[0].kv_file", endsWith("target/pd-shm-test/pd-pd-test-r0.kv"))
                .body("ranks[0].region_bytes", equalTo(64 * BLOCK_BYTES))
                .body("layout.block", containsString("[layer][k|v][head][token][dim]"))
                .body("layout.layers", equalTo(24))
                .body("layout.heads_per_rank", equalTo(2))
                .body("layout.head_dim", equalTo(64))
                .body("layout.block_tokens", equalTo(16))
                .body("layout.dtype_bytes", equalTo(2))
                .extract().jsonPath();
        long nonce = given().get("/v1/producer/requests/ei-1").then().statusCode(200)
                .body("state", equalTo("writing"))
                .body("slot", notNullValue())
                .body("expires_in_ms", nullValue())
                .body("finish_deadline_in_ms", greaterThan(0))
                .body("block_ids", equalTo(r.getList("block_ids")))
                .body("ranks_finished", equalTo(0))
                .extract().jsonPath().getLong("nonce");
        byte[] kv = randomBytes(3 * BLOCK_BYTES, 1);
        writeThroughFile(Path.of(r.getString("ranks[0].kv_file")), r.getList("block_ids", Integer.class), kv);

        Map<String, Object> params = finish("ei-1");

        assertEquals(nonce, ((Number) params.get("remote_lease_nonce")).longValue());
        assertEquals(List.of(r.getList("block_ids")), params.get("remote_block_ids"));
        given().get("/v1/producer/requests/ei-1").then().statusCode(200)
                .body("state", equalTo("exported"))
                .body("expires_in_ms", lessThanOrEqualTo(30_000))
                .body("finish_deadline_in_ms", nullValue());
        pullAndReadBack("ei-1", 40, params, kv);
    }

    @Test
    void anEngineUploadsTheKvFinishesAndDReadsExactlyThoseBytes() {
        given().contentType(ContentType.JSON).body(reserveBody("ei-2", 17))
                .post("/v1/producer/requests").then().statusCode(201).body("upload_bytes", equalTo(2 * BLOCK_BYTES));
        byte[] kv = randomBytes(2 * BLOCK_BYTES, 2);

        given().contentType(ContentType.BINARY).body(kv).put("/v1/producer/requests/ei-2/kv").then().statusCode(204);
        Map<String, Object> params = finish("ei-2");

        pullAndReadBack("ei-2", 17, params, kv);
    }

    @Test
    void aReservationWithBadInputGetsAProblemEachAndHoldsNothing() {
        given().contentType(ContentType.JSON).body(Map.of("num_tokens", 4, "kv_transfer_params", remoteDecode()))
                .post("/v1/producer/requests").then().statusCode(400).contentType(PROBLEM)
                .body("type", equalTo("urn:pd-connector:problem:validation-failed"))
                .body("violations.field", hasItem("request_id"));
        for (Object tokens : new Object[] {0, -3}) {
            given().contentType(ContentType.JSON)
                    .body(Map.of("request_id", "bad", "num_tokens", tokens, "kv_transfer_params", remoteDecode()))
                    .post("/v1/producer/requests").then().statusCode(400)
                    .body("type", equalTo("urn:pd-connector:problem:validation-failed"))
                    .body("violations.field", hasItem("num_tokens"));
        }
        given().contentType(ContentType.JSON).body(Map.of("request_id", "bad", "kv_transfer_params", remoteDecode()))
                .post("/v1/producer/requests").then().statusCode(400)
                .body("violations.field", hasItem("num_tokens"));
        given().contentType(ContentType.JSON).body(reserveBody("a:b", 4))
                .post("/v1/producer/requests").then().statusCode(400)
                .body("violations.field", hasItem("request_id"));
        given().contentType(ContentType.JSON).body(reserveBody("bad", 64 * 16 + 1))
                .post("/v1/producer/requests").then().statusCode(400).contentType(PROBLEM)
                .body("type", equalTo("urn:pd-connector:problem:invalid-argument"))
                .body("detail", containsString("1024-token KV capacity"));
        given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "bad", "num_tokens", 4, "kv_transfer_params", Map.of()))
                .post("/v1/producer/requests").then().statusCode(400)
                .body("type", equalTo("urn:pd-connector:problem:invalid-kv-transfer-params"))
                .body("detail", containsString("do_remote_decode"));
        given().contentType(ContentType.JSON).body("{\"request_id\": \"bad\", ")
                .post("/v1/producer/requests").then().statusCode(400).contentType(PROBLEM)
                .body("type", equalTo("urn:pd-connector:problem:malformed-request"));
        given().contentType(ContentType.TEXT).body("x")
                .post("/v1/producer/requests").then().statusCode(415).contentType(PROBLEM)
                .body("type", equalTo("urn:pd-connector:problem:unsupported-media-type"));
        given().get("/v1/producer/requests/bad").then().statusCode(404);
    }

    @Test
    void aReservationBeyondTheFreeBlocksIs503AndAHeldIdCannotBeReservedAgain() {
        given().contentType(ContentType.JSON).body(reserveBody("all", 64 * 16))
                .post("/v1/producer/requests").then().statusCode(201).body("block_ids", hasSize(64));

        given().contentType(ContentType.JSON).body(reserveBody("more", 1))
                .post("/v1/producer/requests").then().statusCode(503).contentType(PROBLEM)
                .header("Retry-After", "1")
                .body("type", equalTo("urn:pd-connector:problem:no-free-blocks"));
        given().contentType(ContentType.JSON).body(reserveBody("all", 1))
                .post("/v1/producer/requests").then().statusCode(409)
                .body("type", equalTo("urn:pd-connector:problem:wrong-state"))
                .body("detail", containsString("still holds a lease"));
        given().get("/v1/producer/requests/all").then().statusCode(200).body("block_ids", hasSize(64));
        given().get("/v1/producer/requests/more").then().statusCode(404);

        given().delete("/v1/producer/requests/all").then().statusCode(204);
    }

    @Test
    void uploadsAndFinishesTheRequestsStateDoesNotAllowAreRefusedAndChangeNothing() {
        given().contentType(ContentType.BINARY).body(new byte[BLOCK_BYTES])
                .put("/v1/producer/requests/nobody/kv").then().statusCode(404).contentType(PROBLEM)
                .body("type", equalTo("urn:pd-connector:problem:unknown-request"))
                .body("request_id", equalTo("nobody"));
        given().post("/v1/producer/requests/nobody/finish").then().statusCode(404)
                .body("type", equalTo("urn:pd-connector:problem:unknown-request"));
        given().contentType(ContentType.JSON).body(reserveBody("ei-s", 5))
                .post("/v1/producer/requests").then().statusCode(201);

        given().contentType(ContentType.BINARY).body(new byte[10])
                .put("/v1/producer/requests/ei-s/kv").then().statusCode(400).contentType(PROBLEM)
                .body("type", equalTo("urn:pd-connector:problem:invalid-argument"))
                .body("detail", containsString(BLOCK_BYTES + " bytes (1 blocks x 1 ranks"));
        given().contentType(ContentType.BINARY).put("/v1/producer/requests/ei-s/kv").then().statusCode(400);
        given().contentType(ContentType.JSON).body("{}")
                .put("/v1/producer/requests/ei-s/kv").then().statusCode(415).contentType(PROBLEM);
        given().get("/v1/producer/requests/ei-s").then().statusCode(200).body("state", equalTo("writing"));

        finish("ei-s");
        given().post("/v1/producer/requests/ei-s/finish").then().statusCode(409).contentType(PROBLEM)
                .body("type", equalTo("urn:pd-connector:problem:wrong-state"))
                .body("request_id", equalTo("ei-s"))
                .body("detail", containsString("finished already"));
        given().contentType(ContentType.BINARY).body(new byte[BLOCK_BYTES])
                .put("/v1/producer/requests/ei-s/kv").then().statusCode(409)
                .body("type", equalTo("urn:pd-connector:problem:wrong-state"));
        given().get("/v1/producer/requests/ei-s").then().statusCode(200).body("state", equalTo("exported"));

        given().delete("/v1/producer/requests/ei-s").then().statusCode(204);
    }

    @Test
    void anAbortedReservationIsGoneAndCannotBeFinished() {
        given().contentType(ContentType.JSON).body(reserveBody("ei-a", 20))
                .post("/v1/producer/requests").then().statusCode(201);

        given().delete("/v1/producer/requests/ei-a").then().statusCode(204);

        given().get("/v1/producer/requests/ei-a").then().statusCode(404)
                .body("type", equalTo("urn:pd-connector:problem:unknown-request"));
        given().post("/v1/producer/requests/ei-a/finish").then().statusCode(404);
        given().delete("/v1/producer/requests/ei-a").then().statusCode(404);
    }

    @Test
    void statusOfUnknownOrMalformedRequestsIsAProblemOnEitherSide() {
        given().get("/v1/producer/requests/nobody").then().statusCode(404).contentType(PROBLEM)
                .body("type", equalTo("urn:pd-connector:problem:unknown-request"));
        given().get("/v1/consumer/requests/nobody").then().statusCode(404).contentType(PROBLEM)
                .body("type", equalTo("urn:pd-connector:problem:unknown-request"))
                .body("request_id", equalTo("nobody"));
        given().get("/v1/producer/requests/a:b").then().statusCode(400)
                .body("type", equalTo("urn:pd-connector:problem:invalid-argument"));
        given().get("/v1/consumer/requests/a,b").then().statusCode(400)
                .body("type", equalTo("urn:pd-connector:problem:invalid-argument"));
    }

    private static Map<String, Object> reserveBody(String id, int tokens) {
        return Map.of("request_id", id, "num_tokens", tokens, "kv_transfer_params", remoteDecode());
    }

    private static Map<String, Object> remoteDecode() {
        return Map.of("do_remote_decode", true);
    }

    private static Map<String, Object> finish(String id) {
        return given().post("/v1/producer/requests/" + id + "/finish").then().statusCode(200)
                .body("request_id", equalTo(id))
                .body("kv_transfer_params.do_remote_prefill", equalTo(true))
                .body("kv_transfer_params.remote_lease_nonce", notNullValue())
                .extract().path("kv_transfer_params");
    }

    /** D pulls what P exported, reports the pull, and hands back exactly the bytes the engine wrote. */
    private static void pullAndReadBack(String id, int tokens, Map<String, Object> params, byte[] expected) {
        List<Integer> tokenIds = IntStream.range(0, tokens).map(i -> (i * 131 + 7) % 1000).boxed().toList();
        given().contentType(ContentType.JSON)
                .body(Map.of("request_id", id, "token_ids", tokenIds, "kv_transfer_params", params))
                .post("/v1/consumer/pull?matches_reference=true").then().statusCode(200)
                .body("state", equalTo("received"))
                .body("matches_reference", equalTo(false));
        given().get("/v1/consumer/requests/" + id).then().statusCode(200)
                .body("state", equalTo("received"))
                .body("reason", nullValue())
                .body("deadline_in_ms", nullValue())
                .body("local_blocks", hasSize(expected.length / BLOCK_BYTES));

        byte[] kv = given().get("/v1/consumer/requests/" + id + "/kv").then().statusCode(200).extract().asByteArray();

        assertArrayEquals(expected, kv);
    }

    /** What a local engine does: map P's KV file and write its slice of each reserved block in place. */
    private static void writeThroughFile(Path file, List<Integer> blocks, byte[] kv) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
                Arena arena = Arena.ofConfined()) {
            MemorySegment region = channel.map(FileChannel.MapMode.READ_WRITE, 0, channel.size(), arena);
            for (int i = 0; i < blocks.size(); i++) {
                MemorySegment.copy(kv, i * BLOCK_BYTES, region, ValueLayout.JAVA_BYTE,
                        (long) blocks.get(i) * BLOCK_BYTES, BLOCK_BYTES);
            }
        }
    }

    private static byte[] randomBytes(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }
}
