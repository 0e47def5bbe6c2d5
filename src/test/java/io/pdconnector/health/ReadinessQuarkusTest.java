package io.pdconnector.health;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;

import io.quarkus.test.junit.QuarkusTest;
import org.junit.jupiter.api.Test;

@QuarkusTest
class ReadinessQuarkusTest {

    @Test
    void readinessReportsTheRealNixlEngineLoaded() {
        given().when().get("/q/health/ready")
                .then().statusCode(200)
                .body("status", equalTo("UP"))
                .body("checks.name", hasItem("transfer-engine"))
                .body("checks.find { it.name == 'transfer-engine' }.data.kind", equalTo("nixl"));
    }
}
