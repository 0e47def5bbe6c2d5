package io.pdconnector.api.engine;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * A decoder's batched op on a producer's engine socket (a plugin pointed at the wrong instance): each pull is
 * refused {@code role-not-served} in its own frame and the connection goes on serving.
 */
@QuarkusTest
@TestProfile(EngineSocketProducerQuarkusTest.Producer.class)
class EngineSocketProducerQuarkusTest {

    /** This class's own profile: an instance in role producer. */
    public static class Producer implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("pd.role", "producer");
        }
    }

    @Test
    void aProducerRefusesEachPullOfAPullsRequestAndKeepsTheConnection() throws IOException {
        Path socket = Path.of(given().get("/v1/kv-layout").then().statusCode(200).extract()
                .<String>path("engine_socket"));
        Map<String, Object> pull = Map.of("request_id", "pp-a", "token_ids", List.of(1, 2, 3), "decode_rank", 0,
                "kv_transfer_params", Map.of("do_remote_prefill", true));
        try (EngineSocketClient d = new EngineSocketClient(socket)) {
            d.sendRaw(new ObjectMapper().writeValueAsBytes(Map.of("op", "pulls", "pulls", List.of(pull,
                    Map.of("request_id", "pp-b")))));
            Map<Integer, JsonNode> byIndex = new TreeMap<>();
            for (int i = 0; i < 2; i++) {
                JsonNode frame = d.receiveFrame();
                byIndex.put(frame.get("index").asInt(), frame);
            }

            assertEquals(List.of(0, 1), List.copyOf(byIndex.keySet()));
            assertEquals("role-not-served", byIndex.get(0).at("/body/reason").asText(), byIndex.toString());
            EngineSocketClient.Reply hello = d.call(Map.of("op", "hello"));
            assertEquals(200, hello.status(), "the connection still serves after the op: " + hello.body());
            assertTrue(hello.body().has("features"), hello.body().toString());
        }
    }
}
