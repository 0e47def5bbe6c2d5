package io.pdconnector.deploy;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.pdconnector.config.PdConfig;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.opentest4j.AssertionFailedError;

/**
 * What K8sManifestsQuarkusTest holds a GPU pod to (k8s/overlays/gpu, pd.kv.memory=vram) can fail: a pod like the
 * overlay's passes, and each way of breaking CUDA IPC between its containers, or their sharing of one GPU, is caught.
 */
class GpuPodCheckTest {

    private static final String POD = """
            securityContext: {runAsUser: 10001}
            shareProcessNamespace: true
            resourceClaims: [{name: gpu, resourceClaimTemplateName: pd-engine-gpu}]
            initContainers:
              - name: pd-connector
                image: pd-connector:jvm
                restartPolicy: Always
                ports: [{name: http, containerPort: 8080}]
                securityContext: {capabilities: {add: [IPC_LOCK]}}
                resources: {claims: [{name: gpu}], limits: {rdma/rdma_shared_device_a: 1}}
            containers:
              - name: vllm
                image: vllm-pd-connector-gpu:v0.32.0
                command: [python3, -m, vllm.entrypoints.openai.api_server]
                args:
                  - --model=Qwen/Qwen2.5-0.5B-Instruct
                  - --port=8000
                  - --dtype=bfloat16
                  - --block-size=128
                  - --max-num-seqs=256
                  - --attention-backend=FLASH_ATTN
                  - '--kv-transfer-config={"kv_connector":"PdConnector","kv_connector_module_path":"pd_connector_vllm.connector",
                     "kv_role":"kv_both","kv_buffer_device":"cuda","kv_load_failure_policy":"fail",
                     "kv_connector_extra_config":{"pd_url":"http://127.0.0.1:8080"}}'
                ports: [{name: openai, containerPort: 8000}]
                env: [{name: PYTORCH_CUDA_ALLOC_CONF, value: "expandable_segments:False"}]
                startupProbe: {httpGet: {path: /health, port: openai}}
                livenessProbe: {httpGet: {path: /health, port: openai}}
                readinessProbe: {httpGet: {path: /health, port: openai}}
                resources: {claims: [{name: gpu}], requests: {memory: 16Gi}, limits: {memory: 16Gi}}
            """;

    private static final String TEMPLATE = """
            apiVersion: resource.k8s.io/v1beta1
            kind: ResourceClaimTemplate
            metadata: {name: pd-engine-gpu}
            spec: {spec: {devices: {requests: [{name: gpu, deviceClassName: gpu.nvidia.com}]}}}
            """;

    private static final Map<String, String> SIDECAR_ENV = Map.of(
            "PD_MODEL_LAYERS", "24", "PD_MODEL_KV_HEADS", "2", "PD_MODEL_HEAD_DIM", "64",
            "PD_MODEL_BLOCK_TOKENS", "128", "PD_MODEL_DTYPE_BYTES", "2", "PD_KV_MAX_NUM_SEQS", "256",
            "PD_ROLE", "producer", "PD_KV_MEMORY", "vram", "PD_KV_GPU_UUID", "sole-visible");

    @Test
    void aPodLikeTheOverlaysPasses() throws Exception {
        JsonNode spec = pod();
        check(spec, SIDECAR_ENV);
        GpuPodCheck.checkClaimTemplates("pod", spec, List.of(new YAMLMapper().readTree(TEMPLATE)));
    }

    static Stream<Arguments> brokenPods() {
        return Stream.of(
                broken("no shared PID namespace", "shareProcessNamespace", s -> ((ObjectNode) s).remove("shareProcessNamespace")),
                broken("hostPID instead", "no hostPID", s -> ((ObjectNode) s).put("hostPID", true)),
                broken("the sidecar without the claim", "same GPU claim", s -> ((ObjectNode) s.at("/initContainers/0/resources"))
                        .remove("claims")),
                broken("vLLM without the claim", "vLLM names the pod's GPU claim", s -> ((ObjectNode) s.at("/containers/0/resources"))
                        .remove("claims")),
                broken("a claim the pod does not have", "are the pod's resourceClaims", s -> ((ArrayNode) s.path("resourceClaims"))
                        .removeAll()),
                broken("the device plugin's GPU", "nvidia.com/gpu", s -> ((ObjectNode) s.at("/containers/0/resources/limits"))
                        .put("nvidia.com/gpu", 1)),
                broken("expandable segments on", "expandable segments", s -> ((ObjectNode) s.at("/containers/0/env/0"))
                        .put("value", "max_split_size_mb:64,expandable_segments:True")),
                broken("a CPU build's KV setting", "VLLM_CPU_KVCACHE_SPACE", s -> ((ArrayNode) s.at("/containers/0/env"))
                        .addObject().put("name", "VLLM_CPU_KVCACHE_SPACE").put("value", "4")),
                broken("FlashInfer", "--attention-backend", s -> ((ArrayNode) s.at("/containers/0/args"))
                        .set(5, "--attention-backend=FLASHINFER")),
                broken("no attention backend", "--attention-backend", s -> ((ArrayNode) s.at("/containers/0/args"))
                        .set(5, "--seed=1")),
                broken("a CPU KV buffer", "kv_buffer_device", s -> ((ArrayNode) s.at("/containers/0/args"))
                        .set(6, s.at("/containers/0/args/6").asText().replace("\"cuda\"", "\"cpu\""))),
                broken("the sidecar without an RDMA device", "RDMA device", s -> ((ObjectNode) s.at(
                        "/initContainers/0/resources")).remove("limits")),
                broken("the sidecar unable to pin memory", "IPC_LOCK", s -> ((ObjectNode) s.at("/initContainers/0"))
                        .remove("securityContext")),
                broken("vLLM as another uid", "sidecar's set non-root uid", s -> ((ObjectNode) s.at("/containers/0"))
                        .putObject("securityContext").put("runAsUser", 0)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("brokenPods")
    void aBrokenPodFails(String what, String saying, Consumer<JsonNode> breakIt) throws Exception {
        JsonNode spec = pod();
        breakIt.accept(spec);
        AssertionFailedError e = assertThrows(AssertionFailedError.class, () -> check(spec, SIDECAR_ENV), what);
        assertTrue(e.getMessage().contains(saying), what + ": the failure says what is wrong: " + e.getMessage());
    }

    @Test
    void aSidecarThatAllowsHostPathsForGpuMemoryFails() throws Exception {
        Map<String, String> env = new HashMap<>(SIDECAR_ENV);
        env.put("PD_KV_VRAM_HOST_PATH", "allow");
        AssertionFailedError e = assertThrows(AssertionFailedError.class, () -> check(pod(), env));
        assertTrue(e.getMessage().contains("pd.kv.vram-host-path"), e.getMessage());
    }

    @Test
    void aSidecarNotToldWhichGpuFails() throws Exception {
        Map<String, String> env = new HashMap<>(SIDECAR_ENV);
        env.remove("PD_KV_GPU_UUID");
        AssertionFailedError e = assertThrows(AssertionFailedError.class, () -> check(pod(), env));
        assertTrue(e.getMessage().contains("pd.kv.gpu-uuid"), e.getMessage());
    }

    @Test
    void aClaimTemplateMissingOrForTwoGpusFails() throws Exception {
        JsonNode spec = pod();
        AssertionFailedError missing = assertThrows(AssertionFailedError.class,
                () -> GpuPodCheck.checkClaimTemplates("pod", spec, List.of()));
        assertTrue(missing.getMessage().contains("which the overlay defines"), missing.getMessage());
        JsonNode two = new YAMLMapper().readTree(TEMPLATE.replace("deviceClassName: gpu.nvidia.com",
                "deviceClassName: gpu.nvidia.com, count: 2"));
        AssertionFailedError e = assertThrows(AssertionFailedError.class,
                () -> GpuPodCheck.checkClaimTemplates("pod", spec, List.of(two)));
        assertTrue(e.getMessage().contains("requests one GPU"), e.getMessage());
    }

    private static void check(JsonNode spec, Map<String, String> sidecarEnv) {
        PdConfig config = K8sManifestsQuarkusTest.convert(sidecarEnv, K8sManifestsQuarkusTest.pdEnvNames(), "pod");
        VllmContainerCheck.check("pod", spec, spec.at("/containers/0"), spec.at("/initContainers/0"), config, 8080);
    }

    private static JsonNode pod() throws Exception {
        return new YAMLMapper().readTree(POD);
    }

    private static Arguments broken(String what, String saying, Consumer<JsonNode> breakIt) {
        return Arguments.of(what, saying, breakIt);
    }
}
