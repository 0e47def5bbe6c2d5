package io.pdconnector.deploy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Every metric an operator watches: the series the Grafana dashboard ({@link Dashboard}) and the alert rules
 * ({@code k8s/base/prometheusrule.yaml}) query, and the role of the pods that export it (prefill pods run
 * {@code producer}, decode pods {@code consumer}, the router Deployment {@code router}). Each must exist on a fresh
 * instance of its role, before any traffic: a series that appears only after its first event shows "no data" on
 * a healthy fleet and leaves an alert's ratio undefined.
 */
public final class MonitoredMetrics {

    public static final Path RULES = Path.of("k8s/base/prometheusrule.yaml");
    private static final Pattern METRIC = Pattern.compile("\\b(pd_[a-z0-9_]+|vllm:nixl_[a-z0-9_]+)");
    private static final Set<String> ENGINES = Set.of("producer", "consumer");
    private static final Set<String> EVERY_ROLE = Set.of("producer", "consumer", "router");

    /** The role(s) whose pods export each queried series; a new query must be given its role here. */
    static final Map<String, Set<String>> ROLES = new TreeMap<>(Map.ofEntries(
            // P: leases, slots, the notifications decoders send it
            Map.entry("pd_exports_without_slot_total", Set.of("producer")),
            Map.entry("pd_lease_duration_seconds_bucket", Set.of("producer")),
            Map.entry("pd_notifications_refused_total", Set.of("producer")),
            Map.entry("pd_slots_in_use", Set.of("producer")),
            Map.entry("pd_slots_total", Set.of("producer")),
            Map.entry("pd_stale_notifications_ignored_total", Set.of("producer")),
            Map.entry("vllm:nixl_num_kv_expired_reqs_total", Set.of("producer")),
            Map.entry("vllm:nixl_num_notifications_after_expiry_total", Set.of("producer")),
            // D: pulls, their READs, what it refuses
            Map.entry("pd_blocks_in_quarantine", Set.of("consumer")),
            Map.entry("pd_pull_declines_total", Set.of("consumer")),
            Map.entry("pd_pulls_total", Set.of("consumer")),
            Map.entry("pd_registry_peers_refused_total", Set.of("consumer")),
            Map.entry("vllm:nixl_bytes_transferred_sum", Set.of("consumer")),
            Map.entry("vllm:nixl_num_failed_notifications_total", Set.of("consumer")),
            Map.entry("vllm:nixl_num_failed_transfers_total", Set.of("consumer")),
            Map.entry("vllm:nixl_num_lease_check_failures_total", Set.of("consumer")),
            Map.entry("vllm:nixl_post_time_seconds_bucket", Set.of("consumer")),
            Map.entry("vllm:nixl_xfer_time_seconds_bucket", Set.of("consumer")),
            // either engine: its KV pool and step loop
            Map.entry("pd_blocks_in_use", ENGINES),
            Map.entry("pd_blocks_total", ENGINES),
            Map.entry("pd_queue_depth", ENGINES),
            Map.entry("pd_step_duration_seconds_bucket", ENGINES),
            Map.entry("pd_step_duration_seconds_count", ENGINES),
            // every pod has a registry
            Map.entry("pd_registry_instances", EVERY_ROLE),
            Map.entry("pd_registry_reachable", EVERY_ROLE),
            Map.entry("pd_registry_reconnects_total", EVERY_ROLE),
            // the router
            Map.entry("pd_router_aborts_total", Set.of("router")),
            Map.entry("pd_router_leg_seconds_bucket", Set.of("router")),
            Map.entry("pd_router_requests_total", Set.of("router")),
            Map.entry("pd_router_retries_total", Set.of("router"))));

    private MonitoredMetrics() {
    }

    /** The series the dashboard's panels and variables and the alert rules' expressions name. */
    public static Set<String> queried() throws IOException {
        Set<String> names = new TreeSet<>(Dashboard.metricNames());
        names.addAll(alertRuleMetricNames());
        return names;
    }

    public static Set<String> alertRuleMetricNames() throws IOException {
        JsonNode rule = new YAMLMapper().readTree(RULES.toFile());
        Set<String> names = new TreeSet<>();
        for (JsonNode group : rule.at("/spec/groups")) {
            for (JsonNode r : group.path("rules")) {
                Matcher m = METRIC.matcher(r.path("expr").asText());
                while (m.find()) {
                    names.add(m.group(1));
                }
            }
        }
        if (names.isEmpty()) {
            throw new AssertionError(RULES + " queries no metric");
        }
        return names;
    }

    /** The queried series a fresh instance of {@code role} must export. */
    public static Set<String> of(String role) throws IOException {
        Set<String> names = new TreeSet<>();
        for (String name : queried()) {
            if (ROLES.getOrDefault(name, Set.of()).contains(role)) {
                names.add(name);
            }
        }
        return names;
    }
}
