package io.pdconnector.api.openai;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;

import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.ValidatableResponse;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Bad OpenAI-style requests: each gets a 400 problem with its own type and a sentence naming what is
 * wrong, and none leaves a lease or a pull behind.
 */
@QuarkusTest
class OpenAiBadInputQuarkusTest {

    private static final String COMPLETIONS = "/v1/completions";
    private static final String CHAT = "/v1/chat/completions";
    private static final String PROBLEM = "application/problem+json";
    private static final List<Map<String, Object>> HELLO = List.of(Map.of("role", "user", "content", "hello"));

    @AfterEach
    void nothingIsHeldAfterwards() {
        ToyRouter.awaitIdle();
    }

    @Test
    void aCompletionWithoutPromptNamesTheField() {
        rejected(COMPLETIONS, Map.of("max_tokens", 4), "validation-failed")
                .body("violations.field", hasItem("prompt"))
                .body("detail", containsString("prompt: is required"));
    }

    @Test
    void maxTokensOutside1To4096AreRejected() {
        for (int bad : new int[] {0, 4097}) {
            rejected(COMPLETIONS, Map.of("prompt", "a b", "max_tokens", bad), "validation-failed")
                    .body("violations.field", hasItem("max_tokens"));
        }
        rejected(CHAT, Map.of("messages", HELLO, "max_completion_tokens", 0), "validation-failed")
                .body("violations.field", hasItem("max_completion_tokens"));
    }

    @Test
    void moreThanOneChoiceIsRejected() {
        rejected(COMPLETIONS, Map.of("prompt", "a b", "n", 2), "validation-failed")
                .body("violations.field", hasItem("n"))
                .body("detail", containsString("one choice per request"));
    }

    @Test
    void aChatWithoutMessagesOrWithARolelessMessageIsRejected() {
        rejected(CHAT, Map.of("messages", List.of()), "validation-failed")
                .body("violations.field", hasItem("messages"))
                .body("detail", containsString("at least one message"));
        rejected(CHAT, Map.of("max_tokens", 3), "validation-failed").body("violations.field", hasItem("messages"));
        rejected(CHAT, Map.of("messages", List.of(Map.of("content", "hi"))), "validation-failed")
                .body("violations.field", hasItem("messages[0].role"));
    }

    @Test
    void aChatPartThatIsNotTextIsRejected() {
        Map<String, Object> image = Map.of("type", "image_url", "image_url", Map.of("url", "http://x/y.png"));
        rejected(CHAT, Map.of("messages", List.of(Map.of("role", "user", "content", List.of(image)))),
                "invalid-argument").body("detail", containsString("messages[0].content parts"));
    }

    @Test
    void promptsThatAreNotOnePromptOfValidTokensAreRejected() {
        rejected(COMPLETIONS, Map.of("prompt", List.of("one", "two")), "invalid-argument")
                .body("detail", containsString("batched prompts are not supported"));
        rejected(COMPLETIONS, Map.of("prompt", 7), "invalid-argument")
                .body("detail", containsString("a string or a list of token ids"));
        rejected(COMPLETIONS, Map.of("prompt", List.of(1, 151_936)), "invalid-argument")
                .body("detail", containsString("token ids must be in"));
        rejected(COMPLETIONS, Map.of("prompt", "   "), "invalid-argument")
                .body("detail", containsString("no tokens"));
        rejected(COMPLETIONS, Map.of("prompt", "w ".repeat(64 * 16 + 1)), "invalid-argument")
                .body("detail", containsString("KV blocks"));
    }

    @Test
    void kvTransferParamsThatAreNotAnObjectOrContradictThemselvesAreRejected() {
        rejected(COMPLETIONS, Map.of("prompt", "a b", "kv_transfer_params", "yes"), "invalid-kv-transfer-params")
                .body("detail", containsString("must be a JSON object"));
        rejected(COMPLETIONS, Map.of("prompt", "a b", "kv_transfer_params", Map.of("do_remote_decode", "true")),
                "invalid-kv-transfer-params").body("detail", containsString("do_remote_decode must be a boolean"));
        rejected(COMPLETIONS, Map.of("prompt", "a b",
                "kv_transfer_params", Map.of("do_remote_decode", true, "do_remote_prefill", true)),
                "invalid-kv-transfer-params").body("detail", containsString("cannot both be true"));
        rejected(COMPLETIONS, Map.of("prompt", "a b", "kv_transfer_params", Map.of("do_remote_prefill", true)),
                "invalid-kv-transfer-params").body("detail", containsString("remote_engine_id is missing"));
    }

    @Test
    void aDecodeLegWhosePromptOrBlocksDoNotFitPsParamsIsRejectedAndChangesNothing() {
        Map<String, Object> client = Map.of("prompt", "one two three", "max_tokens", 2);
        Map<String, Object> fromP = ToyRouter.prefill(COMPLETIONS, "ob-1", client);

        rejected(COMPLETIONS, ToyRouter.decodeLeg(Map.of("prompt", "one two three four"), fromP),
                "invalid-kv-transfer-params").body("detail", containsString("remote_num_tokens is 3"));
        Map<String, Object> negative = new HashMap<>(fromP);
        negative.put("remote_block_ids", List.of(List.of(-1)));
        rejected(COMPLETIONS, ToyRouter.decodeLeg(client, negative), "invalid-kv-transfer-params")
                .body("detail", containsString("negative"));

        ToyRouter.post(COMPLETIONS, "ob-1", ToyRouter.decodeLeg(client, fromP)).then().statusCode(200);
    }

    @Test
    void aStreamedPrefillLegIsRejectedBeforeItTakesALease() {
        Map<String, Object> leg = new HashMap<>(ToyRouter.prefillLeg(Map.of("prompt", "a b c")));
        leg.put("stream", true);
        rejected(COMPLETIONS, leg, "invalid-argument").body("detail", containsString("set stream to false"));
    }

    @Test
    void anXRequestIdThatCannotTravelInANotificationIsRejected() {
        given().contentType(ContentType.JSON).header("X-Request-Id", "a:b").body(Map.of("prompt", "a b"))
                .post(COMPLETIONS)
                .then().statusCode(400).contentType(PROBLEM)
                .body("type", equalTo("urn:pd-connector:problem:invalid-argument"))
                .body("detail", containsString("X-Request-Id"));
    }

    @Test
    void malformedJsonIsAProblem() {
        given().contentType(ContentType.JSON).body("{\"prompt\": ").post(COMPLETIONS)
                .then().statusCode(400).contentType(PROBLEM).body("status", equalTo(400));
    }

    private static ValidatableResponse rejected(String path, Map<String, Object> body, String type) {
        return given().contentType(ContentType.JSON).body(body).post(path)
                .then().statusCode(400).contentType(PROBLEM)
                .body("type", equalTo("urn:pd-connector:problem:" + type))
                .body("status", equalTo(400));
    }
}
