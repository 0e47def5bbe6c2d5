package io.pdconnector.api.engine;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.pdconnector.api.NothingHeld;
import io.quarkus.test.junit.QuarkusTest;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * An engine step's pulls and releases in one request each over D's engine socket (feature pull-batch), on one
 * instance in role both with real NIXL: each pull answered as the same pull alone would be, in a frame of its own,
 * each release in order, and nothing held afterwards.
 */
@QuarkusTest
class EngineSocketBatchQuarkusTest {

    @AfterEach
    void nothingIsHeld() throws InterruptedException {
        NothingHeld.assertNothingHeld();
    }

    private static Path socket() {
        return Path.of(given().get("/v1/kv-layout").then().statusCode(200).extract().<String>path("engine_socket"));
    }

    @Test
    void theHelloNamesThePullBatch() throws IOException {
        try (EngineSocketClient d = new EngineSocketClient(socket())) {
            JsonNode features = d.call(Map.of("op", "hello")).body().get("features");
            assertTrue(features.toString().contains("\"" + EngineSocketPulls.FEATURE + "\""), features.toString());
        }
    }

    @Test
    void aStepsPullsAreEachAnsweredAsAloneThenReleasedInOneRequest() throws IOException {
        Map<String, Object> paramsA = EngineSocketQuarkusTest.prefill("eb-a", 40);
        Map<String, Object> paramsB = EngineSocketQuarkusTest.prefill("eb-b", 17);
        Map<String, Object> strangers = new HashMap<>(EngineSocketQuarkusTest.prefill("eb-c", 8));
        strangers.put("remote_engine_id", "nobody-knows-this-engine");
        Map<String, Object> noRank = body(EngineSocketQuarkusTest.pull("eb-x", 4, paramsA, 0));
        noRank.remove("decode_rank");
        try (EngineSocketClient d = new EngineSocketClient(socket())) {
            d.sendRaw(json(Map.of("op", "pulls", "pulls", List.of(
                    body(EngineSocketQuarkusTest.pull("eb-a", 40, paramsA, 0)),
                    body(EngineSocketQuarkusTest.pull("eb-b", 17, paramsB, 0)),
                    noRank,
                    body(EngineSocketQuarkusTest.pull("eb-c", 8, strangers, 0))))));

            Map<Integer, JsonNode> byIndex = new TreeMap<>();
            for (int i = 0; i < 4; i++) {
                JsonNode frame = d.receiveFrame();
                assertTrue(frame.get("index").isInt(), frame.toString());
                assertEquals(null, byIndex.put(frame.get("index").asInt(), frame), "one answer per pull: " + frame);
            }
            assertEquals(List.of(0, 1, 2, 3), List.copyOf(byIndex.keySet()));
            assertReceived(byIndex.get(0), "eb-a", 3);
            assertReceived(byIndex.get(1), "eb-b", 2);
            assertProblem(byIndex.get(2), 400, "invalid-decode-rank");
            assertProblem(byIndex.get(3), 409, "unknown_peer");
            given().get("/v1/consumer/requests/eb-a").then().statusCode(200);

            EngineSocketClient.Reply released = d.call(Map.of("op", "releases", "releases", List.of(
                    Map.of("request_id", "eb-a", "decode_rank", 0), Map.of("request_id", "nobody", "decode_rank", 0),
                    Map.of("request_id", "eb-b", "decode_rank", 0), Map.of("request_id", "eb-b", "decode_rank", 9))));

            assertEquals(200, released.status(), released.body().toString());
            JsonNode results = released.body().get("results");
            assertEquals(List.of(204, 404, 204, 400), statuses(results), results.toString());
            assertEquals("unknown-request", results.at("/1/body/reason").asText());
            assertEquals("invalid-decode-rank", results.at("/3/body/reason").asText());
            assertEquals(200, d.call(Map.of("op", "hello")).status(), "the connection goes on");
        } finally {
            given().delete("/v1/producer/requests/eb-c").then().statusCode(204);
        }
        given().get("/v1/consumer/requests/eb-a").then().statusCode(404);
        given().get("/v1/consumer/requests/eb-b").then().statusCode(404);
        String metrics = given().get("/q/metrics").then().statusCode(200).extract().asString();
        assertTrue(metrics.contains("pd_engine_socket_requests_total{op=\"pulls\",status=\"200\"}"), metrics);
        assertTrue(metrics.contains("pd_engine_socket_requests_total{op=\"releases\",status=\"204\"}"), metrics);
        assertTrue(metrics.contains("pd_engine_socket_requests_total{op=\"releases\",status=\"404\"}"), metrics);
        assertTrue(metrics.contains("pd_engine_socket_requests_total{op=\"pulls\",status=\"409\"}"), metrics);
    }

    @Test
    void aListMissingEmptyOrTooLongIsRefusedWholeInOneFrameAndNothingIsPulled() throws IOException {
        Map<String, Object> params = EngineSocketQuarkusTest.prefill("eb-long", 4);
        List<Object> tooMany = new ArrayList<>();
        for (int i = 0; i <= EngineSocketPulls.MAX_PULLS; i++) {
            tooMany.add(body(EngineSocketQuarkusTest.pull("eb-long", 4, params, 0)));
        }
        try (EngineSocketClient d = new EngineSocketClient(socket())) {
            for (Object pulls : new Object[] {List.of(), tooMany, "eb-long"}) {
                d.sendRaw(json(Map.of("op", "pulls", "pulls", pulls)));
                JsonNode frame = d.receiveFrame();
                assertFalse(frame.has("index"), frame.toString());
                assertProblem(frame, 400, "invalid-argument");
            }
            assertProblemReply(d.call(Map.of("op", "pulls")), 400, "invalid-argument");
            assertProblemReply(d.call(Map.of("op", "releases", "releases", List.of())), 400, "invalid-argument");
            assertProblemReply(d.call(Map.of("op", "releases")), 400, "invalid-argument");
            assertEquals(200, d.call(Map.of("op", "hello")).status(), "the connection goes on");
            given().get("/v1/consumer/requests/eb-long").then().statusCode(404);
        } finally {
            given().delete("/v1/producer/requests/eb-long").then().statusCode(204);
        }
    }

    private static void assertReceived(JsonNode frame, String id, int blocks) {
        assertEquals(200, frame.get("status").asInt(), frame.toString());
        JsonNode pulled = frame.get("body");
        assertEquals(id, pulled.get("request_id").asText());
        assertEquals("received", pulled.get("state").asText());
        assertEquals(blocks, pulled.get("block_ids").size());
        assertTrue(pulled.get("blocks_epoch").asLong() > 0, frame.toString());
        assertTrue(pulled.at("/ranks/0/kv_file").asText().endsWith("pd-pd-test-d0.kv"), frame.toString());
    }

    private static void assertProblem(JsonNode frame, int status, String reason) {
        assertEquals(status, frame.get("status").asInt(), frame.toString());
        assertEquals(reason, frame.at("/body/reason").asText(), frame.toString());
        assertFalse(frame.at("/body/detail").asText().isBlank(), frame.toString());
    }

    private static void assertProblemReply(EngineSocketClient.Reply reply, int status, String reason) {
        assertEquals(status, reply.status(), reply.body().toString());
        assertEquals(reason, reply.reason(), reply.body().toString());
    }

    private static List<Integer> statuses(JsonNode results) {
        List<Integer> out = new ArrayList<>();
        results.forEach(r -> out.add(r.get("status").asInt()));
        return out;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> body(Map<String, Object> pull) {
        return new HashMap<>((Map<String, Object>) pull.get("body"));
    }

    private static byte[] json(Object value) throws IOException {
        return new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsBytes(value);
    }
}
