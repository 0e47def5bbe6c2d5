package io.pdconnector.metrics;

import io.quarkus.test.junit.QuarkusTestProfile;
import java.util.Map;

/** The upstream metric names, as k8s/base/configmap.yaml deploys them: {@code pd.metrics.prefix=vllm:}. */
public class VllmPrefixProfile implements QuarkusTestProfile {
    @Override
    public Map<String, String> getConfigOverrides() {
        return Map.of("pd.metrics.prefix", "vllm:");
    }
}
