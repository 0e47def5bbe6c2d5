package io.pdconnector.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;

import io.pdconnector.api.problem.Problem;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Found by API fuzzing (scripts/fuzz-api.sh, seed 12): a body whose JSON has the wrong type for a
 * field (token_ids [false]) was answered 400 with no body at all, and a body that is not JSON with
 * the detail "HTTP 400 Bad Request". Both are problem documents now, with a sentence saying what is
 * wrong, and change nothing.
 */
@QuarkusTest
class MalformedBodyQuarkusTest {

    @ParameterizedTest
    @ValueSource(strings = {"/v1/consumer/pull", "/v1/producer/prefill"})
    void aWronglyTypedTokenId_isAProblemNamingTheField(String path) {
        given().contentType(ContentType.JSON)
                .body("{\"request_id\":\"mb-1\",\"token_ids\":[false],\"kv_transfer_params\":{\"do_remote_decode\":true}}")
                .post(path).then().statusCode(400)
                .contentType(Problem.MEDIA_TYPE)
                .body("reason", equalTo("malformed-request"))
                .body("detail", containsString("token_ids"));
        given().get("/v1/status").then().statusCode(200)
                .body("producer.leases_live", equalTo(0)).body("consumer.pulls_live", equalTo(0));
    }

    @Test
    void aWronglyTypedField_isAProblem() {
        given().contentType(ContentType.JSON)
                .body("{\"request_id\":\"mb-2\",\"num_tokens\":{},\"kv_transfer_params\":{\"do_remote_decode\":true}}")
                .post("/v1/producer/requests").then().statusCode(400)
                .contentType(Problem.MEDIA_TYPE)
                .body("reason", equalTo("malformed-request"))
                .body("detail", containsString("num_tokens"));
    }

    @Test
    void aBodyThatIsNotJson_isAProblemSayingSo() {
        given().contentType(ContentType.JSON).body(new byte[] {(byte) 0xab})
                .post("/v1/consumer/pull").then().statusCode(400)
                .contentType(Problem.MEDIA_TYPE)
                .body("reason", equalTo("malformed-request"))
                .body("detail", containsString("JSON"));
    }

    /** Also found by fuzzing: a method a path does not take was a problem whose detail only repeated the status. */
    @Test
    void aMethodThePathDoesNotTake_isAProblemSayingSo() {
        given().get("/v1/consumer/pull").then().statusCode(405)
                .contentType(Problem.MEDIA_TYPE)
                .body("reason", equalTo("method-not-allowed"))
                .body("detail", containsString("GET"));
    }
}
