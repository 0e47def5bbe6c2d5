package io.pdconnector.deploy;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.pdconnector.config.KvMemory;
import io.pdconnector.config.PdConfig;
import io.quarkus.runtime.configuration.DurationConverter;
import io.quarkus.runtime.configuration.MemorySize;
import io.quarkus.runtime.configuration.MemorySizeConverter;
import io.quarkus.test.junit.QuarkusTest;
import io.smallrye.config.ConfigMappings;
import io.smallrye.config.PropertiesConfigSource;
import io.smallrye.config.SmallRyeConfig;
import io.smallrye.config.SmallRyeConfigBuilder;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The Kubernetes overlays as kustomize builds them ({@code scripts/deploy-check.sh} writes them to
 * {@code target/k8s/<overlay>.yaml}, then runs this test; the default test run excludes it, as it needs
 * those files) held to the application: every environment key and ConfigMap key is a {@code PdConfig} key
 * whose value converts, the probes and the scrape path answer on this service, the container port is
 * {@code quarkus.http.port}, and each pod's memory is what README "Sizing" computes from its configuration.
 */
@QuarkusTest
class K8sManifestsQuarkusTest {

    /** Keys a pod may carry that are not pd.* keys: the JVM's options (Dockerfile.jvm's entrypoint). */
    private static final Set<String> OTHER_KEYS = Set.of("JAVA_OPTS");
    /** README "Sizing": what a JVM needs beyond its heap (metaspace, code, threads, NIXL, UCX). */
    static final long NON_HEAP_MIB = 384;
    private static final long MIB = 1 << 20;

    @ConfigProperty(name = "quarkus.http.port")
    int httpPort;

    @TestFactory
    Stream<DynamicTest> everyOverlay() throws IOException {
        Path dir = Path.of(System.getProperty("deploy.k8s.manifests", "target/k8s"));
        List<Path> overlays;
        try (Stream<Path> files = Files.list(dir)) {
            overlays = files.filter(p -> p.toString().endsWith(".yaml")).sorted().toList();
        }
        assertFalse(overlays.isEmpty(), "kustomize output in " + dir + " (scripts/deploy-check.sh writes it)");
        return overlays.stream().map(p -> DynamicTest.dynamicTest(p.getFileName().toString(), () -> check(p)));
    }

    private void check(Path overlay) throws IOException {
        List<JsonNode> docs = new ArrayList<>();
        try (var it = new YAMLMapper().readerFor(JsonNode.class).readValues(overlay.toFile())) {
            while (it.hasNext()) {
                docs.add((JsonNode) it.next());
            }
        }
        Map<String, String> envNames = pdEnvNames();
        Map<String, String> shared = new HashMap<>();
        docs.stream().filter(d -> kind(d, "ConfigMap") && name(d).equals("pd-connector"))
                .forEach(d -> d.path("data").properties().forEach(e -> shared.put(e.getKey(), e.getValue().asText())));
        assertFalse(shared.isEmpty(), "the pd-connector ConfigMap");
        int pods = 0;
        int vllmPods = 0;
        int maxVllmTp = 0;
        for (JsonNode d : docs) {
            if (!kind(d, "Deployment")) {
                continue;
            }
            JsonNode spec = d.at("/spec/template/spec");
            JsonNode sidecar = null;
            List<JsonNode> vllm = new ArrayList<>();
            for (JsonNode c : podContainers(spec)) {
                if (isPdConnector(c)) {
                    assertTrue(sidecar == null, name(d) + ": one pd-connector container per pod");
                    sidecar = c;
                } else if (VllmContainerCheck.isVllm(c)) {
                    vllm.add(c);
                }
            }
            if (sidecar == null) {
                assertTrue(vllm.isEmpty(), name(d) + ": vLLM without a pd-connector beside it");
                continue;
            }
            PdConfig config = checkPod(name(d), spec, sidecar, shared, envNames);
            pods++;
            JsonNode pd = sidecar;
            if (stream(spec.path("initContainers")).anyMatch(c -> c == pd)) {
                assertEquals("Always", pd.path("restartPolicy").asText(), name(d) + ": a pd-connector initContainer "
                        + "runs beside the others (restartPolicy: Always); as a plain init container it would never end");
            }
            if (!vllm.isEmpty()) {
                assertEquals(podContainers(spec).size(), vllm.size() + 1,
                        name(d) + ": a vLLM pod holds vLLM and its pd-connector, nothing else");
                for (JsonNode v : vllm) {
                    VllmContainerCheck.check(name(d), spec, v, sidecar, config, httpPort(sidecar));
                }
                if (config.kv().memory() == KvMemory.vram) {
                    GpuPodCheck.checkClaimTemplates(name(d), spec, docs);
                }
                JsonNode beside = sidecar;
                assertTrue(stream(spec.path("initContainers")).anyMatch(c -> c == beside),
                        name(d) + ": the pd-connector beside vLLM is an initContainer (a native sidecar)");
                vllmPods++;
                maxVllmTp = Math.max(maxVllmTp, config.tpSize());
            }
        }
        if (overlay.getFileName().toString().startsWith("vllm") || overlay.getFileName().toString().startsWith("gpu")) {
            assertEquals(2, vllmPods, "P and D with vLLM beside their pd-connector in " + overlay);
        }
        if (overlay.getFileName().toString().startsWith("vllm-tp")) {
            assertTrue(maxVllmTp > 1, "a vLLM with --tensor-parallel-size > 1 in " + overlay + ", the TP overlay");
        }
        assertTrue(pods >= 2, "prefill and decode Deployments in " + overlay);
        List<JsonNode> scrapes = docs.stream().filter(d -> kind(d, "ServiceMonitor"))
                .flatMap(d -> stream(d.at("/spec/endpoints"))).toList();
        if (vllmPods > 0) {
            assertTrue(scrapes.stream().anyMatch(e -> !e.path("port").asText().equals("http")),
                    overlay.getFileName() + ": vLLM's /metrics is scraped beside pd-connector's: " + scrapes);
        }
        for (JsonNode e : scrapes) {
            if (e.path("port").asText().equals("http")) {
                given().get(e.path("path").asText()).then().statusCode(200);
            } else {
                assertVllmScrape(overlay, docs, e, vllmPods);
            }
        }
    }

    /**
     * A scrape endpoint on another port than pd-connector's is vLLM's: {@code /metrics} on the port both
     * engine Services name {@code openai}, where the vLLM containers listen (its Prometheus endpoint is
     * on its API port), and the overlay's NetworkPolicy lets Prometheus in on it.
     */
    private static void assertVllmScrape(Path overlay, List<JsonNode> docs, JsonNode endpoint, int vllmPods) {
        String where = overlay.getFileName() + ": scrape endpoint " + endpoint;
        assertTrue(vllmPods > 0, where + " is not pd-connector's (port http), and no vLLM runs here");
        assertEquals("openai", endpoint.path("port").asText(), where);
        assertEquals("/metrics", endpoint.path("path").asText(), where + ": vLLM serves Prometheus at /metrics");
        List<JsonNode> services = docs.stream().filter(d -> kind(d, "Service"))
                .filter(d -> stream(d.at("/spec/ports")).anyMatch(p -> p.path("name").asText().equals("openai")))
                .toList();
        assertEquals(2, services.size(), where + ": P's and D's Services name the vLLM port openai");
        int port = services.getFirst().at("/spec/ports").findValues("port").getFirst().asInt();
        boolean prometheusMayScrape = docs.stream().filter(d -> kind(d, "NetworkPolicy"))
                .flatMap(d -> stream(d.at("/spec/ingress")))
                .filter(rule -> rule.toString().contains("prometheus"))
                .flatMap(rule -> stream(rule.path("ports")))
                .anyMatch(p -> p.path("port").asInt() == port);
        assertTrue(prometheusMayScrape, where + ": a NetworkPolicy lets Prometheus reach port " + port);
    }

    /** A pod's initContainers then containers. */
    private static List<JsonNode> podContainers(JsonNode spec) {
        List<JsonNode> all = new ArrayList<>();
        spec.path("initContainers").forEach(all::add);
        spec.path("containers").forEach(all::add);
        return all;
    }

    /** The image Dockerfile.jvm builds, whatever registry or tag an overlay gives it. */
    private static boolean isPdConnector(JsonNode c) {
        String image = c.path("image").asText().replaceAll("[@:].*$", "");
        return image.substring(image.lastIndexOf('/') + 1).equals("pd-connector");
    }

    private static int httpPort(JsonNode c) {
        for (JsonNode p : c.path("ports")) {
            if (p.path("name").asText().equals("http")) {
                return p.path("containerPort").asInt();
            }
        }
        return fail("no http port on " + c.path("name").asText());
    }

    /** Holds one pd-connector container to the application; answers its configuration. */
    private PdConfig checkPod(String name, JsonNode spec, JsonNode c, Map<String, String> shared,
            Map<String, String> envNames) {
        Map<String, String> env = new HashMap<>(shared);
        for (JsonNode e : c.path("env")) {
            env.put(e.path("name").asText(), e.has("value") ? e.path("value").asText() : "from-" + name);
        }
        for (String key : env.keySet()) {
            assertTrue(envNames.containsKey(key) || OTHER_KEYS.contains(key) || key.startsWith("PD_AUTH_TOKENS_"),
                    name + ": " + key + " is no key of PdConfig (README \"Configuration\")");
        }
        PdConfig config = convert(env, envNames, name);

        int port = httpPort(c);
        assertEquals(httpPort == 0 ? 8080 : port, port, name + ": the http containerPort is quarkus.http.port");
        assertEquals(String.valueOf(port), env.get("PD_ADVERTISED_PORT"), name + ": advertises the port it serves");
        Map<String, String> probes = Map.of("startupProbe", "/q/health/started", "livenessProbe", "/q/health/live",
                "readinessProbe", "/q/health/ready");
        probes.forEach((probe, path) -> {
            JsonNode get = c.at("/" + probe + "/httpGet");
            assertEquals(path, get.path("path").asText(), name + ": " + probe);
            assertEquals("http", get.path("port").asText(), name + ": " + probe + " port");
            given().get(path).then().statusCode(200);
        });

        long heapMib = heapMib(env.get("JAVA_OPTS"), name);
        long kvBytes = config.role() == PdConfig.Role.router ? 0 : kvBytes(config);
        // pd.kv.memory=vram: the KV pool is GPU memory; the CUDA driver's host memory comes instead (docs/gpu.md)
        long cudaMib = config.kv().memory() == KvMemory.vram ? GpuPodCheck.CUDA_HOST_MIB : 0;
        long expectedMib = ceilMib(kvBytes) + heapMib + NON_HEAP_MIB + cudaMib;
        assertEquals(expectedMib + "Mi", c.at("/resources/limits/memory").asText(),
                name + ": memory limit = KV and slots + heap + " + NON_HEAP_MIB + " MiB (README \"Sizing\")"
                        + (cudaMib == 0 ? "" : " + " + cudaMib + " MiB of CUDA host memory, the KV in VRAM (docs/gpu.md)"));
        assertEquals(c.at("/resources/limits/memory").asText(), c.at("/resources/requests/memory").asText(),
                name + ": requests = limits");
        if (config.role() != PdConfig.Role.router) {
            for (JsonNode v : spec.path("volumes")) {
                if (v.path("name").asText().equals("shm")) {
                    assertTrue(VllmContainerCheck.mib(v.at("/emptyDir/sizeLimit").asText()) * MIB >= kvBytes,
                            name + ": /dev/shm holds the KV files (P's, or D's received KV)");
                }
            }
        }
        return config;
    }

    /** KV region and lease slots of every rank: blocks x block bytes, and (blocks + max seqs) x 8 bytes. */
    static long kvBytes(PdConfig c) {
        long headsPerRank = Math.max(1, c.model().kvHeads() / c.tpSize());
        long blockBytes = (long) c.model().layers() * 2 * headsPerRank * c.model().headDim()
                * c.model().blockTokens() * c.model().dtypeBytes();
        long slots = c.lease().slots() > 0 ? c.lease().slots() : c.kv().numBlocks() + c.kv().maxNumSeqs();
        long region = c.kv().memory() == KvMemory.vram ? 0 : c.kv().numBlocks() * blockBytes; // vram: on the GPU
        return c.tpSize() * (region + slots * 8L);
    }

    static PdConfig convert(Map<String, String> env, Map<String, String> envNames, String pod) {
        Map<String, String> props = new HashMap<>();
        env.forEach((k, v) -> {
            if (envNames.containsKey(k)) {
                props.put(envNames.get(k), v);
            }
        });
        try {
            // The converters Quarkus adds for "30s" and "4M" (the application's own syntax).
            SmallRyeConfig config = new SmallRyeConfigBuilder().withSources(new PropertiesConfigSource(props, "k8s", 500))
                    .withConverter(Duration.class, 200, new DurationConverter())
                    .withConverter(MemorySize.class, 200, new MemorySizeConverter())
                    .withMapping(PdConfig.class).build();
            return config.getConfigMapping(PdConfig.class);
        } catch (RuntimeException e) {
            fail(pod + ": its settings do not convert: " + e.getMessage());
            return null;
        }
    }

    /** PD_LEASE_DURATION -> pd.lease.duration, for every key of the one @ConfigMapping root. */
    static Map<String, String> pdEnvNames() {
        Map<String, String> names = new HashMap<>();
        for (String property : ConfigMappings.getProperties(ConfigMappings.ConfigClass.configClass(PdConfig.class, "pd"))
                .keySet()) {
            names.put(property.replaceAll("[^A-Za-z0-9]", "_").toUpperCase(), property);
        }
        return names;
    }

    private static long heapMib(String javaOpts, String pod) {
        Matcher m = Pattern.compile("-Xmx(\\d+)([mMgG])").matcher(javaOpts == null ? "" : javaOpts);
        assertTrue(m.find(), pod + ": JAVA_OPTS bounds the heap with -Xmx (README \"Sizing\")");
        return Long.parseLong(m.group(1)) * (m.group(2).equalsIgnoreCase("g") ? 1024 : 1);
    }

    private static long ceilMib(long bytes) {
        return (bytes + MIB - 1) / MIB;
    }

    private static boolean kind(JsonNode d, String kind) {
        return d != null && kind.equals(d.path("kind").asText());
    }

    private static String name(JsonNode d) {
        return d.at("/metadata/name").asText();
    }

    private static Stream<JsonNode> stream(JsonNode array) {
        List<JsonNode> list = new ArrayList<>();
        array.forEach(list::add);
        return list.stream();
    }
}
