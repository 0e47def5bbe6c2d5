package io.pdconnector.api.openai;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import io.restassured.http.ContentType;
import io.restassured.response.Response;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A router written from the protocol vLLM's toy proxy and llm-d's routing sidecar speak: the P leg is
 * the client's body with {@code max_tokens: 1}, {@code stream: false} and placeholder
 * {@code kv_transfer_params} asking for a remote decode, under one {@code X-Request-Id}; the D leg is the
 * client's original body with the {@code kv_transfer_params} taken from the top level of P's reply,
 * verbatim, under the same id. Here P and D are the same instance (role both).
 */
final class ToyRouter {

    private ToyRouter() {
    }

    /** The P leg's body, field for field as the toy proxy builds it. */
    static Map<String, Object> prefillLeg(Map<String, Object> client) {
        Map<String, Object> body = new LinkedHashMap<>(client);
        Map<String, Object> params = new LinkedHashMap<>();
        params.put("do_remote_decode", true);
        params.put("do_remote_prefill", false);
        params.put("remote_engine_id", null);
        params.put("remote_block_ids", null);
        params.put("remote_host", null);
        params.put("remote_port", null);
        body.put("kv_transfer_params", params);
        body.put("stream", false);
        body.put("max_tokens", 1);
        if (body.containsKey("max_completion_tokens")) {
            body.put("max_completion_tokens", 1);
        }
        body.remove("stream_options");
        return body;
    }

    /** The D leg's body: the client's request with P's params; the toy proxy also puts back min_tokens (null). */
    static Map<String, Object> decodeLeg(Map<String, Object> client, Map<String, Object> fromP) {
        Map<String, Object> body = new HashMap<>(client);
        body.put("kv_transfer_params", fromP);
        body.put("min_tokens", null);
        body.put("min_completion_tokens", null);
        return body;
    }

    static Response post(String path, String requestId, Map<String, Object> body) {
        var spec = given().contentType(ContentType.JSON).body(body);
        if (requestId != null) {
            spec = spec.header("X-Request-Id", requestId);
        }
        return spec.post(path);
    }

    /** P leg; the reply must be a 200 carrying kv_transfer_params at the top level. */
    static Map<String, Object> prefill(String path, String requestId, Map<String, Object> client) {
        Response p = post(path, requestId, prefillLeg(client));
        assertEquals(200, p.statusCode(), () -> "P leg: " + p.asString());
        return p.jsonPath().getMap("kv_transfer_params");
    }

    /** Both legs; returns D's reply. */
    static Response route(String path, String requestId, Map<String, Object> client) {
        Map<String, Object> fromP = prefill(path, requestId, client);
        return post(path, requestId, decodeLeg(client, fromP));
    }

    /** The same request with no transfer at all: the answer a monolithic engine gives. */
    static Response local(String path, Map<String, Object> client) {
        return post(path, null, client);
    }

    /**
     * Waits until the instance holds no lease and no pull. P frees a lease a step after D's read
     * notification arrives, so this polls, with a deadline.
     */
    static void awaitIdle() {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        Map<String, Object> status;
        do {
            status = given().get("/v1/status").then().statusCode(200).extract().jsonPath().getMap("$");
            if (held(status, "producer", "leases_live") == 0 && held(status, "consumer", "pulls_live") == 0) {
                return;
            }
            sleep();
        } while (System.nanoTime() < deadline);
        fail("requests still held 10 s after the test: " + status);
    }

    @SuppressWarnings("unchecked")
    private static int held(Map<String, Object> status, String side, String field) {
        return ((Number) ((Map<String, Object>) status.get(side)).get(field)).intValue();
    }

    private static void sleep() {
        try {
            Thread.sleep(20);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
