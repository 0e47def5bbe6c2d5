package io.pdconnector.api;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.restassured.path.json.JsonPath;

/** What a {@code @QuarkusTest} of an instance in role both checks after each test: nothing left held on either side. */
public final class NothingHeld {

    private NothingHeld() {
    }

    /**
     * Waits up to 10 s for no lease, slot or block on P and no pull or block on D (D's read notification reaches
     * P's loop a moment after D answers), then fails naming what is still held.
     */
    public static void assertNothingHeld() throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        JsonPath s = status();
        while (!idle(s) && System.nanoTime() < deadline) {
            Thread.sleep(20);
            s = status();
        }
        assertTrue(idle(s), "still held: " + s.prettify());
    }

    private static JsonPath status() {
        return given().get("/v1/status").then().statusCode(200).extract().jsonPath();
    }

    private static boolean idle(JsonPath s) {
        return s.getInt("producer.leases_live") == 0 && s.getInt("producer.blocks_in_use") == 0
                && s.getInt("producer.slots_in_use") == 0 && s.getInt("consumer.pulls_live") == 0
                && s.getInt("consumer.blocks_in_use") == 0;
    }
}
