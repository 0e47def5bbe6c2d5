package io.pdconnector.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A fresh router (no request yet) exports every series the dashboard and the alert rules query on router pods. */
@QuarkusTest
@TestProfile(FreshRouterMetricsQuarkusTest.FreshRouter.class)
class FreshRouterMetricsQuarkusTest {

    /** This class's own profile: its instance starts for it alone. */
    public static class FreshRouter extends FreshInstanceMetrics.Role {
        public FreshRouter() {
            super("router");
        }
    }

    @Test
    void everySeriesTheDashboardAndTheAlertsQueryExistsBeforeAnyTraffic() throws Exception {
        String scrape = FreshInstanceMetrics.scrape();
        FreshInstanceMetrics.assertEveryMonitoredSeriesExists("router", scrape);
        // the labels the router's panels sum by: each known value starts at 0
        List<String> missing = new ArrayList<>();
        for (String cause : List.of("decode", "prefill", "client")) {
            check(scrape, "pd_router_aborts_total", "cause", cause, missing);
        }
        for (String outcome : List.of("ok", "failed")) {
            check(scrape, "pd_router_requests_total", "outcome", outcome, missing);
        }
        for (String leg : List.of("prefill", "decode", "total")) {
            check(scrape, "pd_router_leg_seconds_bucket", "leg", leg, missing);
        }
        assertEquals(List.of(), missing, "labelled router series a fresh router lacks");
    }

    private static void check(String scrape, String name, String label, String value, List<String> missing) {
        if (!FreshInstanceMetrics.hasSeries(scrape, name, label, value)) {
            missing.add(name + "{" + label + "=\"" + value + "\"}");
        }
    }
}
