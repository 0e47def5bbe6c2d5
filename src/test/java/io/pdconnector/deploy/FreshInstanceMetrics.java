package io.pdconnector.deploy;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.quarkus.test.junit.QuarkusTestProfile;
import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the fresh-instance tests share: the first scrape of an instance no request reached (each test class has
 * its own profile, so Quarkus starts an instance for it alone), and the profile of a role as k8s deploys it
 * ({@code pd.metrics.prefix=vllm:}, k8s/base/configmap.yaml).
 */
final class FreshInstanceMetrics {

    private static final Pattern SAMPLE = Pattern.compile("(?m)^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{[^}]*})? \\S+$");

    private FreshInstanceMetrics() {
    }

    /** {@code /q/metrics} now: every sample line. */
    static String scrape() {
        return given().get("/q/metrics").then().statusCode(200).extract().asString();
    }

    /** Fails naming every series the dashboard or the alerts query on {@code role} that {@code scrape} lacks. */
    static void assertEveryMonitoredSeriesExists(String role, String scrape) throws IOException {
        Set<String> exported = new TreeSet<>();
        Matcher m = SAMPLE.matcher(scrape);
        while (m.find()) {
            exported.add(m.group(1));
        }
        Set<String> wanted = MonitoredMetrics.of(role);
        assertFalse(wanted.isEmpty(), "the dashboard and the alerts query something on " + role);
        Set<String> missing = new TreeSet<>(wanted);
        missing.removeAll(exported);
        assertEquals(Set.of(), missing, "series the dashboard or the alert rules query that a fresh " + role
                + " does not export before its first event (a panel shows no data, an alert's ratio is undefined)");
    }

    /** Whether {@code scrape} has a sample of {@code name} labelled {@code label="value"}. */
    static boolean hasSeries(String scrape, String name, String label, String value) {
        return Pattern.compile("(?m)^" + Pattern.quote(name) + "\\{[^}]*" + Pattern.quote(label + "=\"" + value + "\"")
                + "[^}]*} \\S+$").matcher(scrape).find();
    }

    /** A role as its pods run it. */
    abstract static class Role implements QuarkusTestProfile {
        private final String role;

        Role(String role) {
            this.role = role;
        }

        @Override
        public Map<String, String> getConfigOverrides() {
            Map<String, String> m = new HashMap<>();
            m.put("pd.role", role);
            m.put("pd.metrics.prefix", "vllm:");
            return m;
        }
    }
}
