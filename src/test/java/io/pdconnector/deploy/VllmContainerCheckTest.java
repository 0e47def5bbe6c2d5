package io.pdconnector.deploy;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.pdconnector.config.PdConfig;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.opentest4j.AssertionFailedError;

/**
 * What K8sManifestsQuarkusTest holds a vLLM pod to (k8s/overlays/vllm, k8s/overlays/vllm-tp) can fail: pods like the
 * overlays' pass (TP 1, and TP 2 like vllm-tp's D), and each way of breaking the pair that the plugin would trip over
 * at start-up or at the first request, or that starves or outgrows the pod, is caught.
 */
class VllmContainerCheckTest {

    private static final String POD = """
            securityContext: {runAsUser: 10001}
            initContainers:
              - name: pd-connector
                image: pd-connector:jvm
                restartPolicy: Always
                ports: [{name: http, containerPort: 8080}]
                volumeMounts: [{name: shm, mountPath: /dev/shm}]
            containers:
              - name: vllm
                image: vllm-pd-connector:v0.32.0
                command: [python3, -m, vllm.entrypoints.openai.api_server]
                args:
                  - --model=Qwen/Qwen2.5-0.5B-Instruct
                  - --port=8000
                  - --dtype=bfloat16
                  - --block-size
                  - "128"
                  - --max-num-seqs=256
                  - --enforce-eager
                  - '--kv-transfer-config={"kv_connector":"PdConnector","kv_connector_module_path":"pd_connector_vllm.connector",
                     "kv_role":"kv_both","kv_buffer_device":"cpu","kv_load_failure_policy":"fail",
                     "kv_connector_extra_config":{"pd_url":"http://127.0.0.1:8080"}}'
                ports: [{name: openai, containerPort: 8000}]
                env:
                  - {name: VLLM_CPU_KVCACHE_SPACE, value: "4"}
                  - {name: VLLM_CPU_OMP_THREADS_BIND, value: nobind}
                  - {name: OMP_NUM_THREADS, value: "4"}
                startupProbe: {httpGet: {path: /health, port: openai}}
                livenessProbe: {httpGet: {path: /health, port: openai}}
                readinessProbe: {httpGet: {path: /health, port: openai}}
                resources: {requests: {cpu: "4", memory: 9Gi}, limits: {cpu: "4", memory: 9Gi}}
                volumeMounts: [{name: shm, mountPath: /dev/shm}, {name: tmp, mountPath: /tmp}]
            volumes:
              - {name: shm, emptyDir: {medium: Memory, sizeLimit: 1Gi}}
              - {name: tmp, emptyDir: {}}
            """;

    private static final Map<String, String> SIDECAR_ENV = Map.of(
            "PD_MODEL_LAYERS", "24", "PD_MODEL_KV_HEADS", "2", "PD_MODEL_HEAD_DIM", "64",
            "PD_MODEL_BLOCK_TOKENS", "128", "PD_MODEL_DTYPE_BYTES", "2", "PD_KV_MAX_NUM_SEQS", "256",
            "PD_ROLE", "consumer", "PD_CONSUMER_FAILURE_POLICY", "fail");

    @Test
    void aPodLikeTheOverlaysPasses() throws Exception {
        JsonNode spec = pod();
        assertTrue(VllmContainerCheck.isVllm(spec.at("/containers/0")));
        check(spec, SIDECAR_ENV);
    }

    @Test
    void aTp2PodLikeTheTpOverlaysDecodePasses() throws Exception {
        JsonNode spec = pod();
        tp2(spec);
        check(spec, tp(SIDECAR_ENV, 2));
    }

    @Test
    void vllmsSpellingsOfTheFlagsAreRead() throws Exception {
        JsonNode spec = pod();
        tp2(spec);
        ArrayNode args = args(spec);
        args.remove(args.size() - 1);
        args.remove(args.size() - 1);
        args.add("-tp").add("2").add("--distributed_executor_backend").add("mp");
        setArg(spec, 5, "--max_num_seqs=256");
        check(spec, tp(SIDECAR_ENV, 2));
    }

    @Test
    void aPdConnectorContainerIsNoVllm() throws Exception {
        assertFalse(VllmContainerCheck.isVllm(pod().at("/initContainers/0")));
    }

    static Stream<Arguments> brokenPods() {
        return Stream.of(
                broken("pd_url on another port", "pd_url", s -> setArg(s, 7, kvConfig().replace("127.0.0.1:8080", "127.0.0.1:8081"))),
                broken("pd_url on another host", "pd_url", s -> setArg(s, 7, kvConfig().replace("127.0.0.1", "pd-prefill"))),
                broken("another connector module", "kv_connector_module_path", s -> setArg(s, 7, kvConfig().replace("pd_connector_vllm.connector",
                        "vllm.distributed.kv_transfer.kv_connector.v1.nixl_connector"))),
                broken("a GPU KV buffer", "kv_buffer_device", s -> setArg(s, 7, kvConfig().replace("\"cpu\"", "\"cuda\""))),
                broken("block size 16 against 128", "--block-size", s -> setArg(s, 4, "16")),
                broken("no --block-size", "--block-size", s -> setArg(s, 3, "--swap-space")),
                broken("float32 against 2 bytes", "dtype-bytes", s -> setArg(s, 2, "--dtype=float32")),
                broken("no --dtype", "--dtype is set", s -> setArg(s, 2, "--seed=1")),
                broken("an fp8 KV cache", "KV cache has the model's dtype", s -> args(s).add("--kv-cache-dtype=fp8")),
                broken("TP 2 beside pd.tp-size 1", "pd.tp-size 1 is vLLM's --tensor-parallel-size 2", s -> tp2(s)),
                broken("TP 2 as -tp 2 beside pd.tp-size 1", "pd.tp-size 1 is vLLM's --tensor-parallel-size 2",
                        s -> args(s).add("-tp").add("2")),
                broken("pd.tp-size 2 beside TP 1", "pd.tp-size 2 is vLLM's --tensor-parallel-size 1", s -> { }, 2),
                broken("TP 2 on vLLM's pick of executor", "--distributed-executor-backend mp", s -> {
                    tp2(s);
                    args(s).remove(args(s).size() - 1);
                }, 2),
                broken("TP 2 on Ray", "--distributed-executor-backend mp", s -> {
                    tp2(s);
                    args(s).set(args(s).size() - 1, "--distributed-executor-backend=ray");
                }, 2),
                broken("TP 4 against 2 KV heads", "divides pd.model.kv-heads 2", s -> {
                    tp2(s);
                    args(s).set(args(s).size() - 2, "--tensor-parallel-size=4");
                    setEnv(s, "OMP_NUM_THREADS", "2");
                }, 4),
                broken("pipeline parallel 2", "PP 1 only", s -> args(s).add("--pipeline-parallel-size=2")),
                broken("decode context parallel 2 as -dcp 2", "no context parallelism", s -> args(s).add("-dcp").add("2")),
                broken("threads x TP over the CPU limit", "fits vLLM's CPU limit", s -> {
                    tp2(s);
                    ((ObjectNode) s.at("/containers/0/resources/limits")).put("cpu", "4");
                    ((ObjectNode) s.at("/containers/0/resources/requests")).put("cpu", "4");
                }, 2),
                broken("unbound threads without OMP_NUM_THREADS", "OMP_NUM_THREADS is set", s -> setEnv(s, "OMP_NUM_THREADS", null)),
                broken("one CPU list for 2 workers", "one CPU list per TP worker", s -> {
                    tp2(s);
                    setEnv(s, "VLLM_CPU_OMP_THREADS_BIND", "0-3");
                }, 2),
                broken("another max-num-seqs", "--max-num-seqs", s -> setArg(s, 5, "--max-num-seqs=128")),
                broken("a model whose geometry is unknown", "MODEL_GEOMETRY", s -> setArg(s, 0, "--model=meta-llama/Llama-3.1-8B")),
                broken("vLLM's /dev/shm is its own volume", "vLLM mounts the sidecar's volume", s -> ((ObjectNode) s.at("/containers/0/volumeMounts/0"))
                        .put("name", "tmp")),
                broken("a disk-backed shared volume", "memory-backed", s -> ((ObjectNode) s.at("/volumes/0/emptyDir")).remove("medium")),
                broken("vLLM as another uid", "sidecar's uid", s -> ((ObjectNode) s.at("/containers/0")).putObject("securityContext")
                        .put("runAsUser", 0)),
                broken("the sidecar a plain init container", "native sidecar", s -> ((ObjectNode) s.at("/initContainers/0"))
                        .remove("restartPolicy")),
                broken("vLLM on the sidecar's port", "ports differ", s -> {
                    setArg(s, 1, "--port=8080");
                    ((ObjectNode) s.at("/containers/0/ports/0")).put("containerPort", 8080);
                }),
                broken("no readiness probe", "readinessProbe", s -> ((ObjectNode) s.at("/containers/0")).remove("readinessProbe")),
                broken("memory below KV cache + /dev/shm", "holds VLLM_CPU_KVCACHE_SPACE", s -> memory(s, "4Gi")),
                // 5 GiB holds one worker's 2 GiB and the 1.5 GiB /dev/shm, not two workers' KV cache
                broken("memory for one worker's KV cache at TP 2", "holds VLLM_CPU_KVCACHE_SPACE", s -> {
                    tp2(s);
                    memory(s, "5Gi");
                }, 2));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("brokenPods")
    void aBrokenPodFails(String what, String saying, Consumer<JsonNode> breakIt, int sidecarTp) throws Exception {
        JsonNode spec = pod();
        breakIt.accept(spec);
        AssertionFailedError e = assertThrows(AssertionFailedError.class, () -> check(spec, tp(SIDECAR_ENV, sidecarTp)),
                what);
        assertTrue(e.getMessage().contains(saying), what + ": the failure says what is wrong: " + e.getMessage());
    }

    @Test
    void decodesSidecarWithRecomputeFails() throws Exception {
        Map<String, String> env = new HashMap<>(SIDECAR_ENV);
        env.put("PD_CONSUMER_FAILURE_POLICY", "recompute");
        JsonNode spec = pod();
        AssertionFailedError e = assertThrows(AssertionFailedError.class, () -> check(spec, env));
        assertTrue(e.getMessage().contains("failure-policy=fail"), e.getMessage());
    }

    @Test
    void geometryOtherThanTheModelsFails() throws Exception {
        Map<String, String> env = new HashMap<>(SIDECAR_ENV);
        env.put("PD_MODEL_LAYERS", "28");
        JsonNode spec = pod();
        AssertionFailedError e = assertThrows(AssertionFailedError.class, () -> check(spec, env));
        assertTrue(e.getMessage().contains("config.json values"), e.getMessage());
    }

    private static void check(JsonNode spec, Map<String, String> sidecarEnv) {
        PdConfig config = K8sManifestsQuarkusTest.convert(sidecarEnv, K8sManifestsQuarkusTest.pdEnvNames(), "pod");
        VllmContainerCheck.check("pod", spec, spec.at("/containers/0"), spec.at("/initContainers/0"), config, 8080);
    }

    private static JsonNode pod() throws Exception {
        return new YAMLMapper().readTree(POD);
    }

    private static String kvConfig() {
        try {
            return pod().at("/containers/0/args/7").asText();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static ArrayNode args(JsonNode spec) {
        return (ArrayNode) spec.at("/containers/0/args");
    }

    private static void setArg(JsonNode spec, int index, String value) {
        args(spec).set(index, value);
    }

    private static Arguments broken(String what, String saying, Consumer<JsonNode> breakIt) {
        return broken(what, saying, breakIt, 1);
    }

    /** A broken pod whose sidecar runs pd.tp-size {@code sidecarTp}. */
    private static Arguments broken(String what, String saying, Consumer<JsonNode> breakIt, int sidecarTp) {
        return Arguments.of(what, saying, breakIt, sidecarTp);
    }

    /**
     * vLLM at TP 2 as k8s/overlays/vllm-tp runs D's: the mp executor, 2 GiB of KV cache and 4 threads per worker,
     * 8 CPUs, 12 GiB, a 1.5 GiB /dev/shm. Its last two args are the TP size and the executor.
     */
    private static void tp2(JsonNode spec) {
        args(spec).add("--tensor-parallel-size=2").add("--distributed-executor-backend=mp");
        setEnv(spec, "VLLM_CPU_KVCACHE_SPACE", "2");
        ((ObjectNode) spec.at("/containers/0/resources/limits")).put("cpu", "8");
        ((ObjectNode) spec.at("/containers/0/resources/requests")).put("cpu", "8");
        memory(spec, "12Gi");
        ((ObjectNode) spec.at("/volumes/0/emptyDir")).put("sizeLimit", "1536Mi");
    }

    private static Map<String, String> tp(Map<String, String> sidecarEnv, int tp) {
        Map<String, String> env = new HashMap<>(sidecarEnv);
        env.put("PD_TP_SIZE", String.valueOf(tp));
        return env;
    }

    private static void memory(JsonNode spec, String quantity) {
        ((ObjectNode) spec.at("/containers/0/resources/limits")).put("memory", quantity);
        ((ObjectNode) spec.at("/containers/0/resources/requests")).put("memory", quantity);
    }

    /** Sets vLLM's environment variable {@code name}, or removes it (null). */
    private static void setEnv(JsonNode spec, String name, String value) {
        ArrayNode env = (ArrayNode) spec.at("/containers/0/env");
        for (int i = 0; i < env.size(); i++) {
            if (env.get(i).path("name").asText().equals(name)) {
                env.remove(i);
                break;
            }
        }
        if (value != null) {
            env.addObject().put("name", name).put("value", value);
        }
    }
}
