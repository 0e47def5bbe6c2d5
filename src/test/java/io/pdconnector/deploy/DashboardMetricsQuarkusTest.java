package io.pdconnector.deploy;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.pdconnector.metrics.VllmPrefixProfile;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import io.restassured.http.ContentType;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Every metric the Grafana dashboard queries is in {@code /q/metrics} of a running service (role both,
 * {@code pd.metrics.prefix=vllm:} as k8s/base/configmap.yaml sets it), after one prefill and pull, so no panel
 * stays empty for a misspelt or renamed metric. The router's panels ({@code pd_router_*}) are held to a
 * running router by {@code RouterFleetIT}; each role's series, the alert rules' too, to a fresh instance of the
 * role before any traffic by {@code Fresh<Role>MetricsQuarkusTest}.
 */
@QuarkusTest
@TestProfile(VllmPrefixProfile.class)
class DashboardMetricsQuarkusTest {

    private static final Pattern SAMPLE = Pattern.compile("(?m)^([a-zA-Z_:][a-zA-Z0-9_:]*)[ {]");

    @Test
    void everyMetricTheDashboardQueriesIsExported() throws IOException {
        Map<String, Object> params = given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "dash-1", "prompt", "one two three",
                        "kv_transfer_params", Map.of("do_remote_decode", true)))
                .post("/v1/producer/prefill").then().statusCode(200).extract().path("kv_transfer_params");
        given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "dash-1", "prompt", "one two three", "kv_transfer_params", params))
                .post("/v1/consumer/pull").then().statusCode(200);
        given().delete("/v1/consumer/requests/dash-1").then().statusCode(204);

        Set<String> exported = new TreeSet<>();
        Matcher m = SAMPLE.matcher(given().get("/q/metrics").then().statusCode(200).extract().asString());
        while (m.find()) {
            exported.add(m.group(1));
        }
        Set<String> missing = new TreeSet<>();
        List<String> queried = Dashboard.metricNames().stream().filter(n -> !n.startsWith("pd_router_")).toList();
        assertFalse(queried.isEmpty());
        for (String name : queried) {
            if (!exported.contains(name)) {
                missing.add(name);
            }
        }
        assertEquals(Set.of(), missing, "metrics the dashboard queries that /q/metrics lacks");
    }
}
