package io.pdconnector.deploy;

import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import org.junit.jupiter.api.Test;

/** A fresh producer (no request yet) exports every series the dashboard and the alert rules query on producer pods. */
@QuarkusTest
@TestProfile(FreshProducerMetricsQuarkusTest.FreshProducer.class)
class FreshProducerMetricsQuarkusTest {

    /** This class's own profile: its instance starts for it alone. */
    public static class FreshProducer extends FreshInstanceMetrics.Role {
        public FreshProducer() {
            super("producer");
        }
    }

    @Test
    void everySeriesTheDashboardAndTheAlertsQueryExistsBeforeAnyTraffic() throws Exception {
        FreshInstanceMetrics.assertEveryMonitoredSeriesExists("producer", FreshInstanceMetrics.scrape());
    }
}
