package io.pdconnector.api.engine;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.endsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.api.NothingHeld;
import io.pdconnector.api.PromptInput;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The engine's pull and release over D's engine socket, on one instance in role both with real NIXL: the same
 * answers as over HTTP, the same problems for bad input, and nothing held afterwards.
 */
@QuarkusTest
class EngineSocketQuarkusTest {

    @AfterEach
    void nothingIsHeld() throws InterruptedException {
        NothingHeld.assertNothingHeld();
    }



    private static Path socket() {
        return Path.of(given().get("/v1/kv-layout").then().statusCode(200)
                .body("engine_socket", endsWith("target/pd-shm-test/pd-pd-test.sock"))
                .extract().<String>path("engine_socket"));
    }

    @Test
    void kvLayoutNamesTheSocketOnlyItsOwnerAndGroupMayUse() throws IOException {
        Path socket = socket();
        assertTrue(socket.isAbsolute(), socket.toString());
        assertEquals("rw-rw----", PosixFilePermissions.toString(Files.getPosixFilePermissions(socket)));
    }

    @Test
    void anEnginePullsAndReleasesOverTheSocket() throws IOException {
        Map<String, Object> params = prefill("es-1", 40);
        try (EngineSocketClient d = new EngineSocketClient(socket())) {
            assertEquals(1, d.call(Map.of("op", "hello")).body().get("protocol").asInt());

            EngineSocketClient.Reply pulled = d.call(pull("es-1", 40, params, 0));

            assertEquals(200, pulled.status(), pulled.body().toString());
            assertEquals("received", pulled.body().get("state").asText());
            assertEquals(3, pulled.body().get("block_ids").size());
            assertTrue(pulled.body().at("/ranks/0/kv_file").asText().endsWith("pd-pd-test-d0.kv"));
            long epoch = pulled.body().get("blocks_epoch").asLong();
            assertTrue(epoch > 0 && epoch < 1L << 53, "the epoch the engine checks after its copy, exact as a double: "
                    + epoch);
            assertTrue(pulled.body().at("/timings/pull_ms").asDouble() > 0);
            assertTrue(pulled.body().path("kv_checksum").isMissingNode(), "no checksum unless asked for");
            given().get("/v1/consumer/requests/es-1").then().statusCode(200);

            assertEquals(204, d.call(release("es-1", 0)).status());

            EngineSocketClient.Reply again = d.call(release("es-1", 0));
            assertEquals(404, again.status());
            assertEquals("es-1", again.body().get("request_id").asText());
        }
        String metrics = given().get("/q/metrics").then().statusCode(200).extract().asString();
        assertTrue(metrics.contains("pd_engine_socket_requests_total{op=\"pull\",status=\"200\"}"), metrics);
        assertTrue(metrics.contains("pd_engine_socket_requests_total{op=\"release\",status=\"204\"}"), metrics);
        given().get("/v1/consumer/requests/es-1").then().statusCode(404);
    }

    @Test
    void anEngineMayPackItsTokenIdsAndTheHelloSaysSo() throws IOException {
        Map<String, Object> params = prefill("es-p", 300);
        try (EngineSocketClient d = new EngineSocketClient(socket())) {
            EngineSocketClient.Reply hello = d.call(Map.of("op", "hello"));
            assertTrue(hello.body().get("features").toString().contains("\"token-ids-le32\""), hello.body().toString());
            EngineSocketClient.Reply packedRefusal = d.call(packed(pull("es-p", 299, params, 0)));
            EngineSocketClient.Reply arrayRefusal = d.call(pull("es-p", 299, params, 0));
            assertProblem(packedRefusal, 400, "invalid-kv-transfer-params");
            assertEquals(arrayRefusal.body().get("detail"), packedRefusal.body().get("detail"),
                    "299 packed ids are 299 ids, as in an array");

            EngineSocketClient.Reply pulled = d.call(packed(pull("es-p", 300, params, 0)));

            assertEquals(200, pulled.status(), pulled.body().toString());
            assertEquals("received", pulled.body().get("state").asText());
            assertEquals(19, pulled.body().get("block_ids").size());
            assertEquals(204, d.call(release("es-p", 0)).status());
        } finally {
            given().delete("/v1/producer/requests/es-p"); // 404 once the pull above was read and released
        }
    }

    @Test
    void badlyPackedTokenIdsAreRefusedAndNothingIsPulled() throws IOException {
        Map<String, Object> params = prefill("x", 4);
        try (EngineSocketClient d = new EngineSocketClient(socket())) {
            for (Object bad : new Object[] {12, "not base64!", "AQIDBAUG" /* 6 bytes */, le32(1, -1) /* 2^32 - 1 */,
                    le32(new int[PromptInput.MAX_TOKENS + 1])}) {
                Map<String, Object> body = packedBody(pull("x", 4, params, 0), bad);
                body.remove("token_ids");
                assertProblem(d.call(Map.of("op", "pull", "body", body)), 400, "invalid-argument");
            }
            Map<String, Object> both = packedBody(pull("x", 4, params, 0), le32(1, 2, 3, 4));
            assertProblem(d.call(Map.of("op", "pull", "body", both)), 400, "invalid-argument");
            given().get("/v1/consumer/requests/x").then().statusCode(404);
        } finally {
            given().delete("/v1/producer/requests/x").then().statusCode(204);
        }
    }

    @Test
    void anEngineStepsBatchGoesOverTheSocketAsOverHttp() throws IOException {
        try (EngineSocketClient p = new EngineSocketClient(socket())) {
            EngineSocketClient.Reply granted = p.call(Map.of("op", "batch",
                    "body", Map.of("grant", Map.of("blocks", 2, "leases", 1))));
            assertEquals(200, granted.status(), granted.body().toString());
            var grant = granted.body().get("grant");
            String grantId = grant.get("grant_id").asText();
            Map<String, Object> commit = Map.of("grant_id", grantId, "request_id", "es-b", "num_tokens", 16,
                    "block_ids", List.of(grant.at("/block_ids/0").asInt()),
                    "lease_slot", grant.at("/leases/0/slot").asInt(), "lease_nonce", grant.at("/leases/0/nonce").asLong());

            EngineSocketClient.Reply committed = p.call(Map.of("op", "batch", "body",
                    Map.of("commits", List.of(commit), "aborts", List.of("es-b"), "returns", List.of(grantId))));

            assertEquals(200, committed.status(), committed.body().toString());
            assertEquals(200, committed.body().at("/commits/0/status").asInt());
            assertEquals("es-b", committed.body().at("/commits/0/kv_transfer_params/remote_request_id").asText());
            assertEquals(204, committed.body().at("/aborts/0/status").asInt());
            assertEquals(204, committed.body().at("/returns/0/status").asInt());
            assertProblem(p.call(Map.of("op", "batch", "body", Map.of("grant", Map.of("blocks", -1, "leases", 1)))),
                    400, "validation-failed");
        }
    }

    @Test
    void aDeclinedPullIsTheHttpPullsProblem() throws IOException {
        Map<String, Object> params = new HashMap<>(prefill("es-2", 20));
        params.put("remote_engine_id", "nobody-knows-this-engine");
        try (EngineSocketClient d = new EngineSocketClient(socket())) {
            EngineSocketClient.Reply refused = d.call(pull("es-2", 20, params, 0));

            assertEquals(409, refused.status());
            given().contentType(ContentType.JSON).body(pull("es-2", 20, params, 0).get("body"))
                    .post("/v1/consumer/pull").then().statusCode(409)
                    .body("reason", org.hamcrest.Matchers.equalTo(refused.reason()));
        } finally {
            given().delete("/v1/producer/requests/es-2").then().statusCode(204);
        }
    }

    @Test
    void badRequestsGetAProblemAndTheConnectionGoesOn() throws IOException {
        try (EngineSocketClient d = new EngineSocketClient(socket())) {
            assertProblem(d.call(Map.of("op", "read-everything")), 400, EngineSocketCalls.UNKNOWN_OP);
            assertProblem(d.call(Map.of("op", "pull", "body", "not an object")), 400, "invalid-argument");
            Map<String, Object> noRank = new HashMap<>(pull("x", 4, Map.of("do_remote_prefill", true), 0));
            ((Map<String, Object>) noRank.get("body")).remove("decode_rank");
            assertProblem(d.call(noRank), 400, "invalid-decode-rank");
            assertProblem(d.call(Map.of("op", "pull", "body", Map.of("request_id", "x", "token_ids", List.of(1)))),
                    400, "validation-failed");
            assertProblem(d.call(Map.of("op", "pull", "body", Map.of("request_id", "x", "token_ids", List.of(false),
                    "kv_transfer_params", Map.of()))), 400, "malformed-request");
            assertProblem(d.call(Map.of("op", "release")), 400, "invalid-argument");
            assertProblem(d.call(Map.of("op", "release", "request_id", "x", "decode_rank", "zero")), 400,
                    "invalid-decode-rank");
            assertProblem(d.call(release("nobody", 0)), 404, "unknown-request");
            assertProblem(d.call(release("nobody", 7)), 400, "invalid-decode-rank");

            assertEquals(200, d.call(Map.of("op", "hello")).status());
        }
    }

    @Test
    void aFrameThatIsNotJsonIsAnsweredThenTheConnectionCloses() throws IOException {
        try (EngineSocketClient d = new EngineSocketClient(socket())) {
            d.sendRaw("{not json".getBytes(StandardCharsets.UTF_8));

            assertProblem(d.receive(), 400, "malformed-request");
            assertTrue(d.closedByServer());
        }
    }

    @Test
    void aFrameLengthOutOfBoundsClosesTheConnectionUnanswered() throws IOException {
        for (int length : new int[] {0, -1, 4 * 1024 * 1024 + 1}) {
            try (EngineSocketClient d = new EngineSocketClient(socket())) {
                d.sendFrame(length, new byte[0]);

                assertTrue(d.closedByServer(), "length " + length);
            }
        }
        try (EngineSocketClient d = new EngineSocketClient(socket())) {
            assertEquals(200, d.call(Map.of("op", "hello")).status(), "the socket still serves");
        }
    }

    private static void assertProblem(EngineSocketClient.Reply reply, int status, String reason) {
        assertEquals(status, reply.status(), reply.body().toString());
        assertEquals(reason, reply.reason(), reply.body().toString());
        assertFalse(reply.body().path("detail").asText().isBlank(), reply.body().toString());
    }

    static Map<String, Object> prefill(String id, int tokens) {
        given().contentType(ContentType.JSON).body(Map.of("request_id", id, "num_tokens", tokens,
                "kv_transfer_params", Map.of("do_remote_decode", true))).post("/v1/producer/requests")
                .then().statusCode(201);
        return given().post("/v1/producer/requests/" + id + "/finish").then().statusCode(200)
                .extract().path("kv_transfer_params");
    }

    static Map<String, Object> pull(String id, int tokens, Map<String, Object> params, int rank) {
        Map<String, Object> body = new HashMap<>();
        body.put("request_id", id);
        body.put("token_ids", IntStream.range(0, tokens).map(i -> (i * 131 + 7) % 1000).boxed().toList());
        body.put("kv_transfer_params", params);
        body.put("decode_rank", rank);
        return Map.of("op", "pull", "body", body);
    }

    /** The pull with its token_ids packed as token_ids_le32. */
    private static Map<String, Object> packed(Map<String, Object> pull) {
        Map<String, Object> body = new HashMap<>((Map<String, Object>) pull.get("body"));
        int[] ids = ((List<Integer>) body.remove("token_ids")).stream().mapToInt(Integer::intValue).toArray();
        body.put(PackedTokenIds.FIELD, le32(ids));
        return Map.of("op", "pull", "body", body);
    }

    /** A copy of the pull's body with token_ids_le32 set to {@code value}, its token_ids kept. */
    private static Map<String, Object> packedBody(Map<String, Object> pull, Object value) {
        Map<String, Object> body = new HashMap<>((Map<String, Object>) pull.get("body"));
        body.put(PackedTokenIds.FIELD, value);
        return body;
    }

    private static String le32(int... ids) {
        ByteBuffer bytes = ByteBuffer.allocate(4 * ids.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int id : ids) {
            bytes.putInt(id);
        }
        return Base64.getEncoder().encodeToString(bytes.array());
    }

    static Map<String, Object> release(String id, int rank) {
        return Map.of("op", "release", "request_id", id, "decode_rank", rank);
    }
}
