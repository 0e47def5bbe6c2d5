package io.pdconnector.metrics;

import io.quarkus.test.junit.QuarkusTestProfile;
import java.util.Map;

/**
 * The upstream metric names, as k8s/base/configmap.yaml deploys them ({@code pd.metrics.prefix=vllm:}), labelled
 * as a vLLM serving {@code tiny-qwen2} as its second data-parallel engine would label its own.
 */
public class VllmPrefixProfile implements QuarkusTestProfile {
    static final String MODEL_NAME = "tiny-qwen2";
    static final String ENGINE = "1";

    @Override
    public Map<String, String> getConfigOverrides() {
        return Map.of("pd.metrics.prefix", "vllm:", "pd.metrics.model-name", MODEL_NAME, "pd.metrics.engine", ENGINE);
    }
}
