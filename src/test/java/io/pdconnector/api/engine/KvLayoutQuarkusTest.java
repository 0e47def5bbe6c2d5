package io.pdconnector.api.engine;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasKey;
import static org.hamcrest.Matchers.not;

import io.quarkus.test.junit.QuarkusTest;
import org.junit.jupiter.api.Test;

/**
 * An engine reads the geometry it must match: the %test profile's instance, role both, default model; with
 * pd.kv.memory=dram (the default) there is no {@code pools} key at all.
 */
@QuarkusTest
class KvLayoutQuarkusTest {

    @Test
    void theLayoutIsTheConfiguredGeometryAndTheBlockBytesAReservationUses() {
        given().get("/v1/kv-layout").then().statusCode(200)
                .body("engine_id", equalTo("pd-test"))
                .body("role", equalTo("both"))
                .body("tp_size", equalTo(1))
                .body("num_blocks", equalTo(64))
                .body("layers", equalTo(24))
                .body("kv_heads", equalTo(2))
                .body("heads_per_rank", equalTo(2))
                .body("head_dim", equalTo(64))
                .body("block_tokens", equalTo(16))
                .body("dtype_bytes", equalTo(2))
                .body("$", not(hasKey("kv_dtype"))) // pd.model.kv-dtype unset: the width alone
                .body("block_bytes", equalTo(196_608))
                .body("block", equalTo("[layer][k|v][head][token][dim], the rank's heads only"))
                .body("byte_order", equalTo("little-endian"))
                .body("$", not(hasKey("pools")));
    }

    @Test
    void aHostMemoryInstancesHandshakeIsWrittenWithoutTheKvMemoryFields() {
        given().get("/v1/registry/self").then().statusCode(200)
                .body("ranks[0].kvBase", org.hamcrest.Matchers.greaterThan(0L))
                .body("ranks[0]", not(hasKey("kvMemory")))
                .body("ranks[0]", not(hasKey("kvDevice")))
                .body("ranks[0].geometry", not(hasKey("kvDtype")));
    }
}
