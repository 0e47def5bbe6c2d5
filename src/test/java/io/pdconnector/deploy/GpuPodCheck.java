package io.pdconnector.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.pdconnector.config.PdConfig;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * A vLLM pod whose pd-connector keeps the KV pool in GPU memory ({@code pd.kv.memory=vram}, k8s/overlays/gpu,
 * docs/gpu.md) held to what CUDA IPC between its two containers needs: one PID namespace
 * ({@code shareProcessNamespace}), the same one GPU in both (one DRA claim both name; not the device plugin,
 * which gives each container its own), the sidecar told which GPU ({@code pd.kv.gpu-uuid}), no PyTorch
 * expandable segments in vLLM (the plugin refuses them), an attention backend the plugin's GPU copies know; and
 * to what reading another pod's GPU memory needs in the overlay's topology (docs/gpu.md, "Topologies"): an RDMA
 * device and {@code IPC_LOCK} for pd-connector, whose host-path refusal stays on.
 * {@link VllmContainerCheck} calls it in place of its shared-KV-file and CPU-memory checks.
 */
final class GpuPodCheck {

    /**
     * Host memory the CUDA driver (primary context) and UCX's CUDA transports take in pd-connector's JVM beyond
     * README "Sizing": an allowance, not a measurement (no GPU was lent where this was written; docs/gpu.md).
     */
    static final long CUDA_HOST_MIB = 512;

    private static final Set<String> GPU_COPY_BACKENDS = Set.of("FLASH_ATTN");

    private GpuPodCheck() {
    }

    static void check(String pod, JsonNode spec, JsonNode vllm, JsonNode sidecar, PdConfig config, Map<String, String> args) {
        assertTrue(spec.path("shareProcessNamespace").asBoolean(false), pod + ": shareProcessNamespace: true, so the "
                + "plugin can open the CUDA IPC handle of pd-connector's pool (its containers in one PID namespace)");
        assertFalse(spec.path("hostPID").asBoolean(false), pod + ": no hostPID: the pod's own PID namespace is enough");
        Set<String> podClaims = new TreeSet<>();
        spec.path("resourceClaims").forEach(c -> podClaims.add(c.path("name").asText()));
        Set<String> sidecarClaims = claims(sidecar);
        Set<String> vllmClaims = claims(vllm);
        assertFalse(vllmClaims.isEmpty(), pod + ": vLLM names the pod's GPU claim (resources.claims)");
        assertEquals(vllmClaims, sidecarClaims, pod + ": pd-connector names the same GPU claim as vLLM, so both see the "
                + "same GPU");
        assertTrue(podClaims.containsAll(vllmClaims), pod + ": the claims " + vllmClaims + " are the pod's resourceClaims "
                + podClaims);
        for (JsonNode c : List.of(vllm, sidecar)) {
            assertTrue(c.at("/resources/limits/nvidia.com~1gpu").isMissingNode(), pod + ": " + c.path("name").asText()
                    + " asks the device plugin for nvidia.com/gpu, which gives each container its own GPU: claim it instead");
        }
        List<String> uuids = config.kv().gpuUuid().orElse(List.of());
        assertEquals(config.tpSize(), uuids.size(), pod + ": pd.kv.gpu-uuid names one GPU per TP rank (or sole-visible)");
        Map<String, String> env = VllmContainerCheck.env(vllm);
        assertFalse(env.containsKey("VLLM_CPU_KVCACHE_SPACE"), pod + ": VLLM_CPU_KVCACHE_SPACE is a CPU build's setting");
        for (String var : List.of("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")) {
            String conf = env.getOrDefault(var, "").replace(" ", "").toLowerCase();
            assertFalse(conf.contains("expandable_segments:true"), pod + ": " + var + "=" + env.get(var)
                    + ": the plugin refuses PyTorch's expandable segments (they change CUDA memory sharing)");
        }
        String backend = args.get("--attention-backend");
        assertTrue(backend != null && GPU_COPY_BACKENDS.contains(backend), pod + ": --attention-backend is one the "
                + "plugin's GPU copies know " + GPU_COPY_BACKENDS + ", set (vLLM's pick differs by GPU), got " + backend);
        assertEquals(vllm.at("/resources/limits/memory").asText(), vllm.at("/resources/requests/memory").asText(),
                pod + ": vLLM's requests = limits");
        boolean rdma = false;
        for (var limit : (Iterable<Map.Entry<String, JsonNode>>) () -> sidecar.at("/resources/limits").fields()) {
            rdma |= limit.getKey().startsWith("rdma/");
        }
        assertTrue(rdma, pod + ": pd-connector has an RDMA device (an rdma/ resource): P and D are separate pods,"
                + " so UCX reads a peer's GPU memory with GPUDirect RDMA (docs/gpu.md, \"Topologies\")");
        boolean ipcLock = false;
        for (JsonNode cap : sidecar.at("/securityContext/capabilities/add")) {
            ipcLock |= cap.asText().equals("IPC_LOCK");
        }
        assertTrue(ipcLock, pod + ": pd-connector may pin memory for RDMA (capabilities.add: IPC_LOCK)");
        assertEquals(io.pdconnector.config.VramHostPath.refuse, config.kv().vramHostPath(), pod
                + ": pd.kv.vram-host-path stays refuse, so a READ of GPU memory over a host path is refused, not slow");
        long uid = runAsUser(spec, sidecar);
        assertTrue(uid > 0 && uid == runAsUser(spec, vllm), pod + ": vLLM runs as the sidecar's set non-root uid "
                + "(CUDA IPC between processes of one user)");
    }

    /** Each GPU claim of a vram pod comes from a ResourceClaimTemplate of the overlay asking for one device. */
    static void checkClaimTemplates(String pod, JsonNode spec, List<JsonNode> docs) {
        for (JsonNode claim : spec.path("resourceClaims")) {
            String template = claim.path("resourceClaimTemplateName").asText();
            JsonNode t = docs.stream().filter(d -> d != null && "ResourceClaimTemplate".equals(d.path("kind").asText())
                    && template.equals(d.at("/metadata/name").asText())).findFirst().orElse(null);
            assertTrue(t != null, pod + ": its claim " + claim.path("name").asText() + " names ResourceClaimTemplate "
                    + template + ", which the overlay defines");
            JsonNode requests = t.at("/spec/spec/devices/requests");
            assertEquals(1, requests.size(), pod + ": " + template + " requests one device");
            assertEquals(1, requests.get(0).path("count").asInt(1), pod + ": " + template + " requests one GPU");
        }
    }

    private static Set<String> claims(JsonNode container) {
        Set<String> names = new TreeSet<>();
        container.at("/resources/claims").forEach(c -> names.add(c.path("name").asText()));
        return names;
    }

    private static long runAsUser(JsonNode spec, JsonNode container) {
        JsonNode own = container.at("/securityContext/runAsUser");
        return own.isMissingNode() ? spec.at("/securityContext/runAsUser").asLong(-1) : own.asLong();
    }
}
