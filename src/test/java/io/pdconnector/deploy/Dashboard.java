package io.pdconnector.deploy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The metric names the Grafana dashboard (k8s/monitoring/dashboard.json) queries, panels and variables. */
public final class Dashboard {

    public static final Path FILE = Path.of("k8s/monitoring/dashboard.json");
    /** A series name in PromQL: the project's pd_* and the upstream-named nixl_* (with vLLM's prefix). */
    private static final Pattern METRIC = Pattern.compile("\\b(pd_[a-z0-9_]+|vllm:nixl_[a-z0-9_]+)");

    private Dashboard() {
    }

    public static Set<String> metricNames() throws IOException {
        JsonNode dashboard = new ObjectMapper().readTree(FILE.toFile());
        Set<String> names = new TreeSet<>();
        for (JsonNode panel : dashboard.path("panels")) {
            for (JsonNode target : panel.path("targets")) {
                collect(target.path("expr").asText(), names);
            }
        }
        for (JsonNode variable : dashboard.at("/templating/list")) {
            collect(variable.path("query").asText(), names);
        }
        if (names.isEmpty()) {
            throw new AssertionError(FILE + " queries no metric");
        }
        return names;
    }

    private static void collect(String promql, Set<String> names) {
        Matcher m = METRIC.matcher(promql);
        while (m.find()) {
            names.add(m.group(1));
        }
    }
}
