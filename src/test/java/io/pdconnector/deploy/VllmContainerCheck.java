package io.pdconnector.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.pdconnector.config.LoadFailurePolicy;
import io.pdconnector.config.ModelConfig;
import io.pdconnector.config.PdConfig;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A vLLM container beside a pd-connector sidecar (k8s/overlays/vllm) held to what the plugin
 * ({@code integrations/vllm}) needs of that pod: its KV transfer config names the plugin and the sidecar's port on
 * 127.0.0.1; both containers share the memory-backed volume at {@code pd.kv.shm-dir} as the same uid (P's KV file,
 * which vLLM's worker maps read-write); the geometry vLLM's arguments imply is the sidecar's {@code pd.model.*}; the
 * sidecar is a native sidecar (started before vLLM); D's sidecar runs {@code pd.consumer.failure-policy=fail}.
 * Tensor parallelism: each vLLM TP worker saves or loads its KV heads through the pd-connector rank of its number,
 * so {@code pd.tp-size} is vLLM's {@code --tensor-parallel-size}; it divides the model's KV heads; TP > 1 runs
 * vLLM's workers as processes of this container ({@code --distributed-executor-backend mp}), each with its own
 * share of vLLM's KV cache and its own OpenMP pool, which the container's memory and CPUs hold.
 * The plugin checks the geometry again at start-up against {@code GET /v1/kv-layout}; this catches it before a
 * deployment.
 */
final class VllmContainerCheck {

    /** What the plugin is loaded as (integrations/vllm/README.md). */
    static final String CONNECTOR = "PdConnector";
    static final String MODULE = "pd_connector_vllm.connector";

    /**
     * Geometry of the models the overlays serve, from each model's published config.json (layers =
     * num_hidden_layers, kv heads = num_key_value_heads, head dim = head_dim or hidden_size / num_attention_heads).
     * An overlay serving another model adds its line here, read from that model's config.json.
     */
    static final Map<String, List<Integer>> MODEL_GEOMETRY = Map.of(
            "Qwen/Qwen2.5-0.5B-Instruct", List.of(24, 2, 896 / 14));

    /** Bytes per element of vLLM's --dtype values (the KV cache takes the model's dtype unless --kv-cache-dtype). */
    private static final Map<String, Integer> DTYPE_BYTES = Map.of(
            "bfloat16", 2, "float16", 2, "half", 2, "float32", 4, "float", 4);

    /** vLLM's short forms of the flags checked here. */
    private static final Map<String, String> SHORT_FLAGS = Map.of("-tp", "--tensor-parallel-size",
            "-pp", "--pipeline-parallel-size", "-dcp", "--decode-context-parallel-size",
            "-pcp", "--prefill-context-parallel-size");

    private VllmContainerCheck() {
    }

    /** True for a container that runs vLLM with a KV transfer config (any other container is no vLLM). */
    static boolean isVllm(JsonNode container) {
        return args(container).containsKey("--kv-transfer-config");
    }

    static void check(String pod, JsonNode spec, JsonNode vllm, JsonNode sidecar, PdConfig config, int sidecarPort) {
        Map<String, String> args = args(vllm);
        // pd.kv.memory=vram (k8s/overlays/gpu): vLLM's KV is GPU memory, the pool is shared over CUDA IPC (GpuPodCheck)
        boolean vram = config.kv().memory() == io.pdconnector.config.KvMemory.vram;
        checkTransferConfig(pod, args.get("--kv-transfer-config"), sidecarPort, vram ? "cuda" : "cpu");
        checkGeometry(pod, args, config);
        if (vram) {
            GpuPodCheck.check(pod, spec, vllm, sidecar, config, args);
        } else {
            checkSharedKvVolume(pod, spec, vllm, sidecar, config);
        }
        checkPortsAndProbes(pod, vllm, args, sidecarPort);
        if (!vram) {
            checkMemory(pod, spec, vllm, config.tpSize());
            checkThreads(pod, vllm, config.tpSize());
        }
        assertEquals("Always", sidecar.path("restartPolicy").asText(), pod + ": pd-connector is a native sidecar "
                + "(an initContainer with restartPolicy: Always), up before vLLM's plugin asks for its KV layout");
        if (config.role().consumer()) {
            assertEquals(LoadFailurePolicy.FAIL, config.consumer().failurePolicy(), pod + ": D's pd-connector runs "
                    + "pd.consumer.failure-policy=fail (its recompute writes the reference engine's KV, not vLLM's)");
        }
    }

    private static void checkTransferConfig(String pod, String json, int sidecarPort, String bufferDevice) {
        JsonNode kv;
        try {
            kv = new ObjectMapper().readTree(json);
        } catch (JsonProcessingException e) {
            fail(pod + ": --kv-transfer-config is no JSON: " + e.getOriginalMessage());
            return;
        }
        assertEquals(CONNECTOR, kv.path("kv_connector").asText(), pod + ": kv_connector");
        assertEquals(MODULE, kv.path("kv_connector_module_path").asText(), pod + ": kv_connector_module_path");
        assertEquals(bufferDevice, kv.path("kv_buffer_device").asText(), pod + ": kv_buffer_device (the plugin copies "
                + ("cuda".equals(bufferDevice) ? "vLLM's GPU cache: pd.kv.memory=vram" : "vLLM's CPU cache") + ")");
        assertTrue(Set.of("fail", "recompute").contains(kv.path("kv_load_failure_policy").asText("fail")),
                pod + ": kv_load_failure_policy is fail or recompute");
        assertEquals("http://127.0.0.1:" + sidecarPort, kv.at("/kv_connector_extra_config/pd_url").asText(),
                pod + ": pd_url is the sidecar's http port on 127.0.0.1");
    }

    private static void checkGeometry(String pod, Map<String, String> args, PdConfig config) {
        ModelConfig m = config.model();
        assertEquals(String.valueOf(m.blockTokens()), args.get("--block-size"),
                pod + ": --block-size is pd.model.block-tokens (set it: vLLM's default differs by platform)");
        String dtype = args.get("--dtype");
        assertNotNull(dtype, pod + ": --dtype is set (vLLM's CPU build runs float32 checkpoints as bfloat16 by default)");
        assertEquals(m.dtypeBytes(), DTYPE_BYTES.getOrDefault(dtype, -1),
                pod + ": --dtype " + dtype + " is pd.model.dtype-bytes");
        assertEquals("auto", args.getOrDefault("--kv-cache-dtype", "auto"), pod + ": the KV cache has the model's dtype");
        checkParallelism(pod, args, config);
        assertEquals(String.valueOf(config.kv().maxNumSeqs()), args.get("--max-num-seqs"),
                pod + ": --max-num-seqs is pd.kv.max-num-seqs");
        String model = args.get("--model");
        List<Integer> geometry = MODEL_GEOMETRY.get(model);
        assertNotNull(geometry, pod + ": the geometry of --model " + model + " is known to this test "
                + "(add it to VllmContainerCheck.MODEL_GEOMETRY from its config.json)");
        assertEquals(geometry, List.of(m.layers(), m.kvHeads(), m.headDim()),
                pod + ": pd.model.layers, kv-heads, head-dim are " + model + "'s config.json values");
    }

    /**
     * TP N: one pd-connector rank per vLLM TP worker, the workers in this container, N a divisor of the KV heads
     * (vLLM replicates heads across ranks beyond that; the plugin refuses it, as it refuses PP and context
     * parallelism).
     */
    private static void checkParallelism(String pod, Map<String, String> args, PdConfig config) {
        int tp = tpSize(pod, args);
        assertEquals(config.tpSize(), tp, pod + ": pd.tp-size " + config.tpSize() + " is vLLM's --tensor-parallel-size "
                + tp + " (each TP worker saves or loads its KV heads through the pd-connector rank of its number)");
        int kvHeads = config.model().kvHeads();
        assertTrue(kvHeads % tp == 0, pod + ": --tensor-parallel-size " + tp + " divides pd.model.kv-heads " + kvHeads
                + " (at most " + kvHeads + "): vLLM would replicate KV heads across ranks, which the plugin refuses");
        if (tp > 1) {
            assertEquals("mp", args.get("--distributed-executor-backend"), pod + ": --tensor-parallel-size " + tp
                    + " runs with --distributed-executor-backend mp (set, not vLLM's pick, which may be Ray): the "
                    + "workers are processes of this container, beside the sidecar they reach at 127.0.0.1 and whose "
                    + "KV files they map");
        }
        assertEquals("1", args.getOrDefault("--pipeline-parallel-size", "1"), pod + ": the plugin supports PP 1 only");
        for (String cp : List.of("--decode-context-parallel-size", "--prefill-context-parallel-size")) {
            assertEquals("1", args.getOrDefault(cp, "1"), pod + ": " + cp + ": the plugin supports no context parallelism");
        }
    }

    private static int tpSize(String pod, Map<String, String> args) {
        String tp = args.getOrDefault("--tensor-parallel-size", "1");
        assertTrue(tp.matches("[1-9][0-9]*"), pod + ": --tensor-parallel-size is a positive integer, got " + tp);
        return Integer.parseInt(tp);
    }

    private static void checkSharedKvVolume(String pod, JsonNode spec, JsonNode vllm, JsonNode sidecar, PdConfig config) {
        String shmDir = config.kv().shmDir();
        String volume = mountedAt(sidecar, shmDir);
        assertNotNull(volume, pod + ": the sidecar mounts a volume at pd.kv.shm-dir " + shmDir);
        assertEquals(volume, mountedAt(vllm, shmDir), pod + ": vLLM mounts the sidecar's volume at " + shmDir
                + ", where pd-connector's kv_file names P's KV file");
        JsonNode emptyDir = volumeNamed(spec, volume).path("emptyDir");
        assertEquals("Memory", emptyDir.path("medium").asText(), pod + ": " + volume + " is memory-backed");
        long uid = runAsUser(spec, sidecar);
        assertTrue(uid > 0, pod + ": the sidecar runs as a set non-root uid");
        assertEquals(uid, runAsUser(spec, vllm), pod + ": vLLM runs as the sidecar's uid (it writes the KV file "
                + "pd-connector creates)");
    }

    private static void checkPortsAndProbes(String pod, JsonNode vllm, Map<String, String> args, int sidecarPort) {
        Map<String, Integer> ports = new HashMap<>();
        vllm.path("ports").forEach(p -> ports.put(p.path("name").asText(), p.path("containerPort").asInt()));
        assertTrue(ports.containsValue(Integer.parseInt(args.getOrDefault("--port", "8000"))),
                pod + ": vLLM's --port is its containerPort");
        assertFalse(ports.containsValue(sidecarPort), pod + ": vLLM and its sidecar share the pod's network: "
                + "their ports differ");
        for (String probe : List.of("startupProbe", "livenessProbe", "readinessProbe")) {
            JsonNode get = vllm.at("/" + probe + "/httpGet");
            assertEquals("/health", get.path("path").asText(), pod + ": vLLM's " + probe + " is /health");
            String port = get.path("port").asText();
            assertTrue(ports.containsKey(port) || ports.containsValue(get.path("port").asInt(-1)),
                    pod + ": vLLM's " + probe + " port " + port + " is its own");
        }
    }

    /** vLLM's memory holds its own KV cache (VLLM_CPU_KVCACHE_SPACE GiB per TP worker) and the shared /dev/shm volume. */
    private static void checkMemory(String pod, JsonNode spec, JsonNode vllm, int tp) {
        String limit = vllm.at("/resources/limits/memory").asText();
        assertEquals(limit, vllm.at("/resources/requests/memory").asText(), pod + ": vLLM's requests = limits");
        long kvCacheGib = 0;
        for (JsonNode e : vllm.path("env")) {
            if (e.path("name").asText().equals("VLLM_CPU_KVCACHE_SPACE")) {
                kvCacheGib = Long.parseLong(e.path("value").asText());
            }
        }
        assertTrue(kvCacheGib > 0, pod + ": VLLM_CPU_KVCACHE_SPACE is set (vLLM's CPU KV cache, in GiB)");
        String shmVolume = mountedAt(vllm, "/dev/shm");
        long shmMib = shmVolume == null ? 0 : mib(volumeNamed(spec, shmVolume).at("/emptyDir/sizeLimit").asText());
        assertTrue(mib(limit) >= tp * kvCacheGib * 1024 + shmMib, pod + ": vLLM's memory " + limit
                + " holds VLLM_CPU_KVCACHE_SPACE (" + kvCacheGib + " GiB, allocated by each of its " + tp
                + " TP workers) and /dev/shm (" + shmMib + " MiB)");
    }

    /**
     * vLLM's CPU workers each run their own OpenMP pool. Unbound ({@code VLLM_CPU_OMP_THREADS_BIND=nobind}), a pool
     * has OMP_NUM_THREADS threads (unset: one per CPU of the node, not of the container), so threads x TP fit the
     * CPU limit; with CPU lists, one list per worker; "auto" sizes each pool from the pod's cpuset at start-up.
     */
    private static void checkThreads(String pod, JsonNode vllm, int tp) {
        Map<String, String> env = env(vllm);
        String bind = env.getOrDefault("VLLM_CPU_OMP_THREADS_BIND", "auto");
        if (bind.equals("nobind")) {
            String threads = env.getOrDefault("OMP_NUM_THREADS", "");
            assertTrue(threads.matches("[1-9][0-9]*"), pod + ": OMP_NUM_THREADS is set with VLLM_CPU_OMP_THREADS_BIND="
                    + "nobind (the threads of each TP worker's OpenMP pool), got '" + threads + "'");
            double cpus = cpus(pod, vllm.at("/resources/limits/cpu").asText());
            assertTrue(Integer.parseInt(threads) * tp <= cpus, pod + ": OMP_NUM_THREADS " + threads + " x TP " + tp
                    + " fits vLLM's CPU limit " + vllm.at("/resources/limits/cpu").asText() + " (each TP worker runs "
                    + "its own OpenMP pool; oversubscribed, their shared-memory all-reduce waits on descheduled threads)");
        } else if (!bind.equals("auto")) {
            assertEquals(tp, bind.split("\\|").length, pod + ": VLLM_CPU_OMP_THREADS_BIND " + bind
                    + " names one CPU list per TP worker ('|' between them)");
        }
    }

    /** A CPU limit ("4", "500m", "1.5"); none fails: an unlimited container's threads are not held to anything. */
    private static double cpus(String pod, String quantity) {
        assertTrue(quantity.matches("\\d+(\\.\\d+)?m?"), pod + ": vLLM's CPU limit is set, in cores or millicores: '"
                + quantity + "'");
        return quantity.endsWith("m") ? Double.parseDouble(quantity.substring(0, quantity.length() - 1)) / 1000
                : Double.parseDouble(quantity);
    }

    /**
     * vLLM's command and args as flag -> value ("--a=b" or "--a b"; a flag alone -> "true"), in vLLM's spelling:
     * underscores in a flag's name read as dashes, the short forms above as their long ones.
     */
    static Map<String, String> args(JsonNode container) {
        List<String> all = new ArrayList<>();
        container.path("command").forEach(a -> all.add(a.asText()));
        container.path("args").forEach(a -> all.add(a.asText()));
        Map<String, String> flags = new HashMap<>();
        for (int i = 0; i < all.size(); i++) {
            String a = all.get(i);
            int eq = a.indexOf('=');
            String name = eq > 0 ? a.substring(0, eq) : a;
            if (name.startsWith("--")) {
                name = "--" + name.substring(2).replace('_', '-');
            } else if (SHORT_FLAGS.containsKey(name)) {
                name = SHORT_FLAGS.get(name);
            } else {
                continue;
            }
            if (eq > 0) {
                flags.put(name, a.substring(eq + 1));
            } else if (i + 1 < all.size() && !all.get(i + 1).startsWith("--")
                    && !SHORT_FLAGS.containsKey(all.get(i + 1).split("=")[0])) {
                flags.put(name, all.get(++i));
            } else {
                flags.put(name, "true");
            }
        }
        return flags;
    }

    /** A container's literal environment values (valueFrom entries as empty strings). */
    static Map<String, String> env(JsonNode container) {
        Map<String, String> env = new HashMap<>();
        container.path("env").forEach(e -> env.put(e.path("name").asText(), e.path("value").asText("")));
        return env;
    }

    static String mountedAt(JsonNode container, String path) {
        Set<String> names = new HashSet<>();
        container.path("volumeMounts").forEach(v -> {
            if (v.path("mountPath").asText().equals(path)) {
                names.add(v.path("name").asText());
            }
        });
        return names.isEmpty() ? null : names.iterator().next();
    }

    private static JsonNode volumeNamed(JsonNode spec, String name) {
        for (JsonNode v : spec.path("volumes")) {
            if (v.path("name").asText().equals(name)) {
                return v;
            }
        }
        fail("no volume " + name);
        return null;
    }

    private static long runAsUser(JsonNode spec, JsonNode container) {
        JsonNode own = container.at("/securityContext/runAsUser");
        return own.isMissingNode() ? spec.at("/securityContext/runAsUser").asLong(-1) : own.asLong();
    }

    static long mib(String quantity) {
        Matcher m = Pattern.compile("(\\d+)(Mi|Gi)").matcher(quantity);
        assertTrue(m.matches(), "a quantity in Mi or Gi: " + quantity);
        return Long.parseLong(m.group(1)) * (m.group(2).equals("Gi") ? 1024 : 1);
    }
}
