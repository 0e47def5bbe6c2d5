package io.pdconnector.deploy;

import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import org.junit.jupiter.api.Test;

/** A fresh consumer (no request yet) exports every series the dashboard and the alert rules query on consumer pods. */
@QuarkusTest
@TestProfile(FreshConsumerMetricsQuarkusTest.FreshConsumer.class)
class FreshConsumerMetricsQuarkusTest {

    /** This class's own profile: its instance starts for it alone. */
    public static class FreshConsumer extends FreshInstanceMetrics.Role {
        public FreshConsumer() {
            super("consumer");
        }
    }

    @Test
    void everySeriesTheDashboardAndTheAlertsQueryExistsBeforeAnyTraffic() throws Exception {
        FreshInstanceMetrics.assertEveryMonitoredSeriesExists("consumer", FreshInstanceMetrics.scrape());
    }
}
