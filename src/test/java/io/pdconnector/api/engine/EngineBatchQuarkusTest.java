package io.pdconnector.api.engine;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasSize;
import static org.hamcrest.Matchers.notNullValue;
import static org.hamcrest.Matchers.nullValue;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.path.json.JsonPath;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The engine plugin's batch call through the HTTP API of one instance in role both, on real NIXL: a
 * grant, a pull of params built from it before the commit, the commit, and a returned grant; a bad item
 * refused on its own while the others are applied; a refused grant answered in the batch, not as the
 * call's failure; a withdrawn ask. After each test nothing is held.
 */
@QuarkusTest
class EngineBatchQuarkusTest {

    @AfterEach
    void nothingIsHeld() throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        JsonPath status = given().get("/v1/status").then().statusCode(200).extract().jsonPath();
        while (status.getInt("producer.blocks_in_use") + status.getInt("consumer.blocks_in_use") > 0
                && System.nanoTime() < deadline) {
            Thread.sleep(20); // a returned grant's blocks are freed a step after its slots are zeroed
            status = given().get("/v1/status").then().statusCode(200).extract().jsonPath();
        }
        assertEquals(0, status.getInt("producer.blocks_in_use"), status.prettify());
        assertEquals(0, status.getInt("producer.slots_in_use"), status.prettify());
        assertEquals(0, status.getInt("producer.leases_live"), status.prettify());
        assertEquals(0, status.getInt("consumer.blocks_in_use"), status.prettify());
    }

    private static JsonPath batch(Map<String, Object> body) {
        return given().contentType(ContentType.JSON).body(body).post("/v1/producer/batch")
                .then().statusCode(200).extract().jsonPath();
    }

    @Test
    void paramsBuiltFromAGrantArePulledBeforeTheCommit_theCommitExportsThem_andTheGrantGoesBack() {
        JsonPath g = batch(Map.of("grant", Map.of("blocks", 4, "leases", 2))).setRootPath("grant");
        String grantId = g.getString("grant_id");
        List<Integer> blocks = g.getList("block_ids", Integer.class).subList(0, 2);
        int slot = g.getInt("leases[0].slot");
        long nonce = g.getLong("leases[0].nonce");
        Map<String, Object> params = new LinkedHashMap<>(g.getMap("params_template"));
        params.put("remote_request_id", "b-1");
        params.put("remote_block_ids", List.of(blocks));
        params.put("remote_num_tokens", 20);
        params.put("remote_lease_slot", slot);
        params.put("remote_lease_nonce", nonce);

        given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "b-1", "token_ids", java.util.stream.IntStream.range(0, 20).boxed().toList(),
                        "kv_transfer_params", params))
                .post("/v1/consumer/pull").then().statusCode(200).body("state", equalTo("received"));
        given().delete("/v1/consumer/requests/b-1").then().statusCode(204);

        JsonPath committed = batch(Map.of("commits", List.of(Map.of("grant_id", grantId, "request_id", "b-1",
                "num_tokens", 20, "block_ids", blocks, "lease_slot", slot, "lease_nonce", nonce))));
        assertEquals(200, committed.getInt("commits[0].status"));
        assertEquals(params, committed.getMap("commits[0].kv_transfer_params"), "P exports what the engine handed out");

        JsonPath returned = batch(Map.of("returns", List.of(grantId, "g0-404")));
        assertEquals(List.of(204, 404), returned.getList("returns.status", Integer.class));
    }

    @Test
    void aBadCommitIsRefusedAloneWhileTheOthersOfItsBatchApply() {
        JsonPath g = batch(Map.of("grant", Map.of("blocks", 2, "leases", 2))).setRootPath("grant");
        String grantId = g.getString("grant_id");
        List<Integer> blocks = g.getList("block_ids", Integer.class);
        Map<String, Object> good = Map.of("grant_id", grantId, "request_id", "ok", "num_tokens", 16,
                "block_ids", List.of(blocks.get(0)), "lease_slot", g.getInt("leases[0].slot"),
                "lease_nonce", g.getLong("leases[0].nonce"));
        Map<String, Object> wrongNonce = Map.of("grant_id", grantId, "request_id", "bad", "num_tokens", 16,
                "block_ids", List.of(blocks.get(1)), "lease_slot", g.getInt("leases[1].slot"),
                "lease_nonce", g.getLong("leases[1].nonce") + 1);
        JsonPath answer = batch(Map.of("commits", List.of(wrongNonce, good), "aborts", List.of("ok", "never-was")));
        assertEquals(400, answer.getInt("commits[0].status"));
        assertEquals("invalid-argument", answer.getString("commits[0].reason"));
        assertTrue(answer.getString("commits[0].detail").contains("nonce"), answer.getString("commits[0].detail"));
        assertEquals(200, answer.getInt("commits[1].status"));
        assertEquals(List.of(204, 404), answer.getList("aborts.status", Integer.class), "abort after the commit, in order");
        batch(Map.of("returns", List.of(grantId)));
    }

    @Test
    void aGrantPCannotGiveIsAnsweredInTheBatch_andABodyThatIsNoBatchIs400() {
        JsonPath answer = batch(Map.of("grant", Map.of("blocks", 1, "leases", 1, "extend", "g0-404")));
        assertEquals(409, answer.getInt("grant_refused.status"));
        assertEquals(null, (Object) answer.get("grant"));
        JsonPath tooMany = batch(Map.of("grant", Map.of("blocks", 1_000_000, "leases", 1)));
        assertEquals(400, tooMany.getInt("grant_refused.status"));
        given().contentType(ContentType.JSON).body(Map.of("grant", Map.of("blocks", -1, "leases", 1)))
                .post("/v1/producer/batch").then().statusCode(400).body("reason", equalTo("validation-failed"));
        given().contentType(ContentType.JSON).body(Map.of("commits", List.of(Map.of("request_id", "x"))))
                .post("/v1/producer/batch").then().statusCode(400).body("violations", notNullValue());
        given().contentType(ContentType.JSON).body("{}").post("/v1/producer/batch").then().statusCode(200)
                .body("commits", hasSize(0)).body("grant", nullValue());
    }

    /** The plugin never heard the answer to its ask: it withdraws the ask by its id, before or after P granted it. */
    @Test
    void aWithdrawnAskGivesItsGrantBack_andAnAskWithdrawnBeforeItCameIsRefused() {
        assertEquals(3, batch(Map.of("grant", Map.of("blocks", 3, "leases", 1, "ask_id", "http-w.1")))
                .getList("grant.block_ids").size());
        JsonPath withdrawn = batch(Map.of("withdraw", List.of("http-w.1", "http-w.2")));
        assertEquals(List.of("http-w.1", "http-w.2"), withdrawn.getList("withdrawn.id", String.class));
        assertEquals(List.of(204, 404), withdrawn.getList("withdrawn.status", Integer.class),
                "the first ask's grant is taken back; P never saw the second");
        JsonPath late = batch(Map.of("grant", Map.of("blocks", 1, "leases", 1, "ask_id", "http-w.2")));
        assertEquals(409, late.getInt("grant_refused.status"));
        assertTrue(late.getString("grant_refused.detail").contains("withdrawn"), late.getString("grant_refused.detail"));
        assertEquals(null, (Object) late.get("grant"));
        given().contentType(ContentType.JSON).body(Map.of("withdraw", List.of("no spaces")))
                .post("/v1/producer/batch").then().statusCode(400).body("reason", equalTo("validation-failed"));
        given().contentType(ContentType.JSON).body(Map.of("grant", Map.of("blocks", 1, "leases", 1, "ask_id", "a/b")))
                .post("/v1/producer/batch").then().statusCode(400).body("reason", equalTo("validation-failed"));
    }
}
