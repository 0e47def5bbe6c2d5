package io.pdconnector.api.openai;

import static org.hamcrest.Matchers.equalTo;

import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** With kv_load_failure_policy recompute, a D leg whose lease check fails answers from recomputed KV. */
@QuarkusTest
@TestProfile(OpenAiRecomputeQuarkusTest.Recompute.class)
class OpenAiRecomputeQuarkusTest {

    public static class Recompute implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("pd.consumer.failure-policy", "recompute");
        }
    }

    @AfterEach
    void nothingIsHeldAfterwards() {
        ToyRouter.awaitIdle();
    }

    @Test
    void aTamperedDecodeLegIsRecomputedAndStillGivesTheLocalAnswer() {
        Map<String, Object> client = Map.of("prompt", "recompute me from the prompt when the lease fails", "max_tokens", 7);
        Map<String, Object> forged = new HashMap<>(ToyRouter.prefill("/v1/completions", "or-1", client));
        forged.put("remote_lease_nonce", ((Number) forged.get("remote_lease_nonce")).longValue() + 1);

        String decoded = ToyRouter.post("/v1/completions", "or-1", ToyRouter.decodeLeg(client, forged))
                .then().statusCode(200).body("usage.completion_tokens", equalTo(7))
                .extract().path("choices[0].text");

        org.junit.jupiter.api.Assertions.assertEquals(
                ToyRouter.local("/v1/completions", client).jsonPath().getString("choices[0].text"), decoded);
        // D never notified P (the check failed), so P still holds the real lease until the router aborts it.
        io.restassured.RestAssured.given().delete("/v1/producer/requests/or-1").then().statusCode(204);
    }
}
