package io.pdconnector.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.not;
import static org.hamcrest.Matchers.containsString;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.sun.net.httpserver.HttpServer;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * D trusts the registry, never the request: a pull's remote_host and remote_port are only compared
 * with the producer's record, never contacted. Each case points at a listener of this test on a
 * loopback address and asserts it was never called. Before, D fetched {@code /v1/handshake} from
 * whatever the params named (a port scanner through its 502 details), and the next pull's address
 * decided who an engine id was.
 */
@QuarkusTest
class RegistryTrustQuarkusTest {

    private HttpServer listener;
    private final AtomicInteger calls = new AtomicInteger();

    @BeforeEach
    void listen() throws IOException {
        listener = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        listener.createContext("/", exchange -> {
            calls.incrementAndGet();
            byte[] body = "[]".getBytes();
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        listener.start();
    }

    @AfterEach
    void stop() {
        listener.stop(0);
    }

    private Map<String, Object> prefill(String id, List<Integer> tokens) {
        return given().contentType(ContentType.JSON)
                .body(Map.of("request_id", id, "token_ids", tokens, "kv_transfer_params", Map.of("do_remote_decode", true)))
                .post("/v1/producer/prefill").then().statusCode(200).extract().path("kv_transfer_params");
    }

    private io.restassured.response.ValidatableResponse pull(String id, List<Integer> tokens, Map<String, Object> params) {
        return given().contentType(ContentType.JSON)
                .body(Map.of("request_id", id, "token_ids", tokens, "kv_transfer_params", params))
                .post("/v1/consumer/pull").then();
    }

    @Test
    void aHostThatSmugglesAPathIsNeverCalled() {
        List<Integer> tokens = List.of(7, 8, 9);
        Map<String, Object> params = new HashMap<>(prefill("ssrf-1", tokens));
        params.put("remote_engine_id", "ghost");
        params.put("remote_host", "127.0.0.1:" + listener.getAddress().getPort() + "/admin#");
        params.put("remote_port", 80);

        pull("ssrf-1", tokens, params).statusCode(409)
                .body("reason", equalTo("unknown_peer"))
                .body("detail", not(containsString("/admin")));
        assertEquals(0, calls.get(), "D called the address a request named");
        given().delete("/v1/producer/requests/ssrf-1").then().statusCode(204);
    }

    @Test
    void anUnregisteredEngineIsUnknownAndItsAddressIsNeverCalled() {
        List<Integer> tokens = List.of(1, 2, 3);
        Map<String, Object> params = new HashMap<>(prefill("ssrf-2", tokens));
        params.put("remote_engine_id", "ghost");
        params.put("remote_host", "127.0.0.1");
        params.put("remote_port", listener.getAddress().getPort());

        pull("ssrf-2", tokens, params).statusCode(409).body("reason", equalTo("unknown_peer"));
        assertEquals(0, calls.get(), "D called the address a request named");
        given().delete("/v1/producer/requests/ssrf-2").then().statusCode(204);
    }

    @Test
    void aRegisteredEngineAtAnotherAddressIsAPeerMismatchAndTheImpostorIsNeverCalled() {
        List<Integer> tokens = List.of(4, 5, 6);
        Map<String, Object> params = new HashMap<>(prefill("poison-1", tokens));
        params.put("remote_host", "127.0.0.2");
        params.put("remote_port", listener.getAddress().getPort());

        pull("poison-1", tokens, params).statusCode(409).body("reason", equalTo("peer_mismatch"));
        assertEquals(0, calls.get(), "D called the address a request named");
        given().delete("/v1/producer/requests/poison-1").then().statusCode(204);

        // the real producer is untouched: its own params still pull
        Map<String, Object> real = prefill("poison-2", tokens);
        pull("poison-2", tokens, real).statusCode(200).body("state", equalTo("received"));
        given().delete("/v1/consumer/requests/poison-2").then().statusCode(204);
    }
}
