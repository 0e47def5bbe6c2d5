package io.pdconnector.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.pdconnector.protocol.RequestIds;
import io.pdconnector.reference.TextTokenizer;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The OpenAPI document is what API fuzzing (scripts/fuzz-api.sh, schemathesis) generates requests
 * from and checks answers against, so it must state what the service does: fields answered as null
 * are nullable, and request ids carry a pattern in JSON Schema's regex dialect (schemathesis could
 * not use the Java pattern and generated almost only ids the service rejects).
 */
@QuarkusTest
class OpenApiDocumentQuarkusTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    private static JsonNode document() throws Exception {
        return JSON.readTree(given().queryParam("format", "json").get("/q/openapi").then().statusCode(200)
                .extract().asString());
    }

    /** Found by schemathesis (seed 12): GET /v1/producer/requests/{id} answered "expires_in_ms": null. */
    @Test
    void leaseStatus_nullWhileWriting_isAllowedByTheDocument() throws Exception {
        given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "doc-w1", "num_tokens", 20, "kv_transfer_params", Map.of("do_remote_decode", true)))
                .post("/v1/producer/requests").then().statusCode(201);
        try {
            given().get("/v1/producer/requests/doc-w1").then().statusCode(200)
                    .body("state", equalTo("writing")).body("expires_in_ms", equalTo(null));
            JsonNode props = document().at("/components/schemas/LeaseStatusResponse/properties");
            for (String field : List.of("slot", "nonce", "expires_in_ms", "finish_deadline_in_ms")) {
                assertTrue(allowsNull(props.get(field)), field + " is answered as null but the document says " + props.get(field));
            }
        } finally {
            given().delete("/v1/producer/requests/doc-w1");
        }
    }

    @Test
    void pullStatus_nullableFields_areNullableInTheDocument() throws Exception {
        JsonNode props = document().at("/components/schemas/PullStatusResponse/properties");
        for (String field : List.of("reason", "deadline_in_ms", "local_blocks")) {
            assertTrue(allowsNull(props.get(field)), field + ": " + props.get(field));
        }
    }

    @Test
    void requestIds_haveAPatternJsonSchemaToolsCanUse() throws Exception {
        JsonNode doc = document();
        for (String schema : List.of("PrefillRequest", "PullRequest", "ReserveRequest")) {
            String pattern = doc.at("/components/schemas/" + schema + "/properties/request_id/pattern").asText();
            assertEquals(RequestIds.SCHEMA_PATTERN, pattern, schema);
        }
        for (String path : List.of("/v1/producer/requests/{id}", "/v1/consumer/requests/{id}")) {
            JsonNode parameter = doc.at("/paths/" + path.replace("/", "~1") + "/get/parameters/0");
            assertEquals(RequestIds.SCHEMA_PATTERN, parameter.at("/schema/pattern").asText(), path);
        }
        // ECMA-262 (JSON Schema's dialect) has no \p{..} classes and no \z.
        assertFalse(RequestIds.SCHEMA_PATTERN.contains("\\p") || RequestIds.SCHEMA_PATTERN.contains("\\z"));
        // Every id the service accepts matches the documented pattern (it is at most wider, never narrower).
        Pattern documented = Pattern.compile(RequestIds.SCHEMA_PATTERN);
        for (String id : List.of("r1", "ü-é 中文", "a".repeat(256), "\uD83D\uDE00", "x/y")) {
            assertTrue(RequestIds.isValid(id) && documented.matcher(id).matches(), id);
        }
        for (String id : List.of("", "a:b", "a,b", "a\u0000", "a\u0085", "a".repeat(257))) {
            assertFalse(documented.matcher(id).matches(), id);
            assertFalse(RequestIds.isValid(id), id);
        }
    }

    @Test
    void prefillAndReserve_documentTheRequiredDoRemoteDecode() throws Exception {
        JsonNode doc = document();
        for (String schema : List.of("PrefillRequest", "ReserveRequest")) {
            JsonNode params = doc.at("/components/schemas/" + schema + "/properties/kv_transfer_params");
            assertTrue(params.toString().contains("do_remote_decode"), schema + ": " + params);
        }
        given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "doc-p1", "prompt", "a b", "kv_transfer_params", Map.of("do_remote_decode", false)))
                .post("/v1/producer/prefill").then().statusCode(400).body("detail", containsString("do_remote_decode"));
    }

    @Test
    void tokenIds_areDocumentedAsIdsInTheVocabulary() throws Exception {
        JsonNode doc = document();
        for (var schema : Map.of("PrefillRequest", "TokenId", "PullRequest", "PullTokenId").entrySet()) {
            JsonNode tokenIds = doc.at("/components/schemas/" + schema.getKey() + "/properties/token_ids");
            assertEquals(PromptInput.MAX_TOKENS, tokenIds.path("maxItems").asInt(), schema.getKey());
            assertEquals("#/components/schemas/" + schema.getValue(), tokenIds.at("/items/$ref").asText(),
                    schema.getKey());
        }
        JsonNode tokenId = doc.at("/components/schemas/TokenId");
        assertEquals(0, tokenId.path("minimum").asInt());
        assertEquals(TextTokenizer.VOCAB - 1, tokenId.path("maximum").asInt());
        // a pull's ids are bounded by the vocab_size it names (an engine's model's), else by the reference's
        JsonNode pullTokenId = doc.at("/components/schemas/PullTokenId");
        assertEquals(0, pullTokenId.path("minimum").asInt());
        assertTrue(pullTokenId.path("maximum").isMissingNode(), pullTokenId.toString());
        JsonNode vocabSize = doc.at("/components/schemas/PullRequest/properties/vocab_size");
        assertEquals(1, vocabSize.path("minimum").asInt(), vocabSize.toString());
        assertEquals(PullRequest.MAX_VOCAB, vocabSize.path("maximum").asInt(), vocabSize.toString());
    }

    private static boolean allowsNull(JsonNode property) {
        if (property == null) {
            return false;
        }
        JsonNode type = property.get("type");
        if (type != null && type.isArray()) {
            for (JsonNode t : type) {
                if ("null".equals(t.asText())) {
                    return true;
                }
            }
        }
        return property.path("nullable").asBoolean(false) || property.toString().contains("\"null\"");
    }
}
