package io.pdconnector.api.engine;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.api.AuthOnProfile;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** With pd.auth on, a connection to the engine socket starts with a hello carrying an engine token, or is closed. */
@QuarkusTest
@TestProfile(AuthOnProfile.class)
class EngineSocketAuthQuarkusTest {

    private static Path socket() {
        return Path.of(given().auth().oauth2(AuthOnProfile.ENGINE).get("/v1/kv-layout").then().statusCode(200)
                .extract().<String>path("engine_socket"));
    }

    @Test
    void aRequestBeforeTheHelloIsRefusedAndTheConnectionClosed() throws IOException {
        try (EngineSocketClient d = new EngineSocketClient(socket())) {
            EngineSocketClient.Reply refused = d.call(EngineSocketQuarkusTest.release("nobody", 0));

            assertEquals(401, refused.status());
            assertEquals("unauthenticated", refused.reason());
            assertTrue(d.closedByServer());
        }
    }

    @Test
    void aHelloWithoutAnEngineTokenIsRefused() throws IOException {
        for (var hello : Map.of(AuthOnProfile.ROUTER, 403, "not-a-token-anyone-configured", 401).entrySet()) {
            try (EngineSocketClient d = new EngineSocketClient(socket())) {
                EngineSocketClient.Reply refused = d.call(Map.of("op", "hello", "token", hello.getKey()));

                assertEquals(hello.getValue(), refused.status(), refused.body().toString());
                assertTrue(d.closedByServer());
            }
        }
        try (EngineSocketClient d = new EngineSocketClient(socket())) {
            assertEquals(401, d.call(Map.of("op", "hello")).status(), "a hello without a token");
        }
    }

    @Test
    void eitherEngineTokenOfARotationOpensTheConnection() throws IOException {
        for (String token : new String[] {AuthOnProfile.ENGINE, AuthOnProfile.ENGINE_NEW}) {
            try (EngineSocketClient d = new EngineSocketClient(socket())) {
                assertEquals(200, d.call(Map.of("op", "hello", "token", token)).status());

                EngineSocketClient.Reply gone = d.call(EngineSocketQuarkusTest.release("nobody", 0));
                assertEquals(404, gone.status(), "past the hello the calls are served");
            }
        }
    }
}
