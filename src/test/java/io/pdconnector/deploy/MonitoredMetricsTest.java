package io.pdconnector.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** The role table of {@link MonitoredMetrics} is the dashboard's and the alert rules' queries, no more, no less. */
class MonitoredMetricsTest {

    @Test
    void everyQueriedSeriesHasTheRoleThatServesIt() throws IOException {
        Set<String> unassigned = new TreeSet<>(MonitoredMetrics.queried());
        unassigned.removeAll(MonitoredMetrics.ROLES.keySet());
        assertEquals(Set.of(), unassigned, "series the dashboard or the alerts query with no role in MonitoredMetrics");
        Set<String> stale = new TreeSet<>(MonitoredMetrics.ROLES.keySet());
        stale.removeAll(MonitoredMetrics.queried());
        assertEquals(Set.of(), stale, "roles given to series nothing queries any more");
    }

    @Test
    void theAlertRulesAreRead() throws IOException {
        assertTrue(MonitoredMetrics.alertRuleMetricNames().contains("pd_registry_reachable"),
                MonitoredMetrics.alertRuleMetricNames().toString());
        assertTrue(MonitoredMetrics.queried().contains("pd_router_aborts_total"));
    }
}
