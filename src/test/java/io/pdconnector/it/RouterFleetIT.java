package io.pdconnector.it;

import static io.pdconnector.it.ServiceProcess.READY;
import static io.pdconnector.it.ServiceProcess.TARGET;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.pdconnector.testing.EtcdCluster;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * A router ({@code pd.role=router}) in front of two producers and two decoders, each a packaged
 * service process with real NIXL, all finding each other through etcd; and one instance in role
 * {@code both} on its own, whose local answers are the reference: the reference engine draws an
 * answer from the KV the decoder used, so a routed answer equals the reference's exactly when D
 * decoded from P's KV of the same prompt. Shown: the OpenAI Python client through the router;
 * completions and chat, streamed and not; a producer whose leases lapse before any pull can use them
 * (the router retries on another P, counted); a decoder killed (P's lease aborted at once, the request
 * retried on the other D); a producer killed (requests keep succeeding on the other). The figures the
 * README quotes go to {@code target/it-logs/RouterFleetIT/figures.txt}.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RouterFleetIT {

    private static final Duration TTL = Duration.ofSeconds(3);
    private static final Duration SOON = Duration.ofSeconds(20);
    private static final Path LOGS = ServiceProcess.logsOf(RouterFleetIT.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(2)).build();
    private static final String MODEL = "pd-connector-reference";

    private static EtcdCluster etcd;
    private static final Map<String, ServiceProcess> FLEET = new LinkedHashMap<>();
    private static ServiceProcess router;
    private static ServiceProcess reference;
    private static int n;

    @BeforeAll
    static void startFleet() throws Exception {
        Files.createDirectories(LOGS);
        Files.deleteIfExists(LOGS.resolve("figures.txt"));
        etcd = EtcdCluster.start("router", 1, Duration.ofSeconds(30));
        try {
            for (String name : List.of("p1", "p2", "d1", "d2")) {
                start(name, Map.of());
            }
            Map<String, String> r = fleetSettings("router");
            r.put("pd.role", "router");
            r.put("pd.router.policy", "round-robin");
            router = ServiceProcess.start("router", r, LOGS);
            reference = ServiceProcess.start("reference", Map.of("pd.engine-id", "reference", "pd.role", "both",
                    "pd.kv.shm-dir", TARGET.resolve("it-shm").toString(), "pd.lease.state-dir",
                    state("reference").toString()), LOGS);
            for (ServiceProcess s : all()) {
                s.awaitReady(READY);
            }
            awaitRouterSees("the whole fleet", "fleet-p1", "fleet-p2", "fleet-d1", "fleet-d2");
            for (String d : List.of("d1", "d2")) {
                FLEET.get(d).awaitProducers(SOON, "fleet-p1", "fleet-p2");
            }
        } catch (Throwable t) {
            stopFleet();
            throw t;
        }
    }

    @AfterAll
    static void stopFleet() {
        all().forEach(ServiceProcess::close);
        if (etcd != null) {
            etcd.close();
        }
    }

    private static List<ServiceProcess> all() {
        List<ServiceProcess> all = new ArrayList<>(FLEET.values());
        if (router != null) {
            all.add(router);
        }
        if (reference != null) {
            all.add(reference);
        }
        return all;
    }

    private static Path state(String name) throws Exception {
        return Files.createDirectories(TARGET.resolve("it-state").resolve("router-" + name));
    }

    private static Map<String, String> fleetSettings(String name) {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("pd.engine-id", "fleet-" + name);
        m.put("pd.registry.store", "etcd");
        m.put("pd.registry.etcd.endpoints", String.join(",", etcd.clientUrls()));
        m.put("pd.registry.etcd.prefix", "/router-it/");
        m.put("pd.registry.etcd.ttl", TTL.toMillis() + "ms");
        m.put("pd.registry.publish-min-interval", "500ms");
        return m;
    }

    private static ServiceProcess start(String name, Map<String, String> extra) throws Exception {
        Map<String, String> m = fleetSettings(name);
        boolean producer = name.startsWith("p");
        m.put("pd.role", producer ? "producer" : "consumer");
        m.put("pd.kv.num-blocks", producer ? "64" : "128");
        m.put("pd.kv.max-num-seqs", "16");
        m.put("pd.kv.shm-dir", TARGET.resolve("it-shm").toString());
        if (producer) {
            m.put("pd.lease.state-dir", state(name).toString());
        }
        m.putAll(extra);
        ServiceProcess s = ServiceProcess.start(name, m, LOGS);
        FLEET.put(name, s);
        return s;
    }

    private static void awaitRouterSees(String what, String... engineIds) throws Exception {
        router.awaitRegistry(what, v -> {
            for (String id : engineIds) {
                boolean ready = false;
                for (JsonNode i : v.path("instances")) {
                    ready |= i.path("engine_id").asText().equals(id) && i.path("ready").asBoolean()
                            && (!id.contains("-p") || i.path("producer").asBoolean());
                }
                if (!ready) {
                    return false;
                }
            }
            return true;
        }, SOON);
    }

    private static void figure(String line) throws Exception {
        System.out.println("FIGURE " + line);
        Files.writeString(LOGS.resolve("figures.txt"), line + System.lineSeparator(), StandardCharsets.UTF_8,
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }

    // ---- requests

    /** One answer: status, body, headers. */
    record Answer(int status, String body, HttpResponse<String> raw) {
        String header(String name) {
            return raw.headers().firstValue(name).orElse("");
        }

        int retries() {
            return Integer.parseInt(raw.headers().firstValue("X-PD-Retries").orElse("-1"));
        }
    }

    private static Answer post(ServiceProcess to, String path, String requestId, Map<String, Object> body)
            throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(to.uri(path)).timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)));
        if (requestId != null) {
            b.header("X-Request-Id", requestId);
        }
        HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
        return new Answer(r.statusCode(), r.body(), r);
    }

    private static Map<String, Object> completion(String prompt, boolean stream) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("model", MODEL);
        m.put("prompt", prompt);
        m.put("max_tokens", 10);
        m.put("stream", stream);
        return m;
    }

    private static Map<String, Object> chat(String prompt, boolean stream) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("model", MODEL);
        m.put("messages", List.of(Map.of("role", "user", "content", prompt)));
        m.put("max_tokens", 10);
        m.put("stream", stream);
        return m;
    }

    /** The answer's text, from a whole reply or from the events of a stream. */
    private static String text(Answer a) throws Exception {
        assertEquals(200, a.status(), a.body());
        if (!a.header("Content-Type").startsWith("text/event-stream")) {
            JsonNode choice = JSON.readTree(a.body()).path("choices").path(0);
            return choice.has("message") ? choice.path("message").path("content").asText() : choice.path("text").asText();
        }
        StringBuilder text = new StringBuilder();
        for (String line : a.body().split("\n")) {
            if (line.startsWith("data: ") && !line.equals("data: [DONE]")) {
                JsonNode choice = JSON.readTree(line.substring(6)).path("choices").path(0);
                text.append(choice.has("delta") ? choice.path("delta").path("content").asText("")
                        : choice.path("text").asText(""));
            }
        }
        return text.toString();
    }

    private static String prompt() {
        return "prompt " + n++ + " of the router test: the decoder reads what the prefill wrote";
    }

    /** A routed completion whose answer must be the reference's; returns the router's answer. */
    private static Answer routedMatchesReference(Map<String, Object> body, String path) throws Exception {
        Map<String, Object> local = new LinkedHashMap<>(body);
        local.put("stream", false);
        String expected = text(post(reference, path, null, local));
        Answer a = post(router, path, null, body);
        assertEquals(expected, text(a), "routed answer of " + body + " (retries " + a.header("X-PD-Retry-Reasons")
                + ", " + a.header("X-PD-Producer") + " -> " + a.header("X-PD-Decoder") + ")");
        return a;
    }

    // ---------------------------------------------------------------------------------------------

    @Test
    @Order(1)
    void completionsAndChat_streamedAndNot_answerAsTheReferenceDoes_overBothProducers() throws Exception {
        Set<String> producers = new HashSet<>();
        Set<String> decoders = new HashSet<>();
        for (int i = 0; i < 4; i++) {
            for (boolean stream : List.of(false, true)) {
                Answer c = routedMatchesReference(completion(prompt(), stream), "/v1/completions");
                Answer h = routedMatchesReference(chat(prompt(), stream), "/v1/chat/completions");
                for (Answer a : List.of(c, h)) {
                    assertEquals(0, a.retries(), a.raw().headers().toString());
                    assertTrue(a.header("Server-Timing").matches("prefill;dur=[0-9.]+, (decode|pull);dur=[0-9.]+, .*"),
                            a.header("Server-Timing"));
                    assertEquals(stream, a.header("Content-Type").startsWith("text/event-stream"));
                    producers.add(a.header("X-PD-Producer"));
                    decoders.add(a.header("X-PD-Decoder"));
                }
            }
        }
        assertEquals(Set.of("fleet-p1", "fleet-p2"), producers);
        assertEquals(Set.of("fleet-d1", "fleet-d2"), decoders);

        Answer pick = post(router, "/v1/route", null, Map.of());
        assertEquals(200, pick.status(), pick.body());
        JsonNode route = JSON.readTree(pick.body());
        assertTrue(route.path("producer").path("engine_id").asText().matches("fleet-p[12]"), pick.body());
        assertTrue(route.path("decoder").path("engine_id").asText().matches("fleet-d[12]"), pick.body());
        assertEquals(404, post(FLEET.get("d1"), "/v1/route", null, Map.of()).status(), "only a router routes");
        for (String p : List.of("p1", "p2")) {
            FLEET.get(p).awaitStatus("no lease held", s -> s.path("producer").path("leases_live").asInt() == 0, SOON);
        }
    }

    @Test
    @Order(2)
    void theUnmodifiedOpenAiPythonClient_throughTheRouter() throws Exception {
        Path log = LOGS.resolve("openai-client.log");
        Process p = new ProcessBuilder("bash", "scripts/openai-client.sh", router.uri("").toString(),
                reference.uri("").toString()).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        if (!p.waitFor(10, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            throw new AssertionError("the OpenAI client did not finish within 10 minutes; " + log);
        }
        String out = Files.readString(log);
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("13 passed, 0 failed"), out);
    }

    @Test
    @Order(3)
    void figures_routerOverhead_andRequestsPerSecond_routerVsDirectLegs() throws Exception {
        int count = 50;
        ServiceProcess p = FLEET.get("p1");
        ServiceProcess d = FLEET.get("d1");
        double[] direct = new double[count];
        double[] prefill = new double[count];
        double[] decode = new double[count];
        double[] routed = new double[count];
        double[] seenPrefill = new double[count];
        double[] seenDecode = new double[count];
        for (int i = 0; i < 5; i++) { // warm both paths
            routedMatchesReference(completion(prompt(), false), "/v1/completions");
        }
        long t0 = System.nanoTime();
        for (int i = 0; i < count; i++) {
            Map<String, Object> client = completion(prompt(), false);
            String id = "direct-" + i;
            Map<String, Object> pLeg = new LinkedHashMap<>(client);
            pLeg.put("max_tokens", 1);
            pLeg.put("kv_transfer_params", Map.of("do_remote_decode", true));
            long a = System.nanoTime();
            Answer pa = post(p, "/v1/completions", id, pLeg);
            long b = System.nanoTime();
            assertEquals(200, pa.status(), pa.body());
            Map<String, Object> dLeg = new LinkedHashMap<>(client);
            dLeg.put("kv_transfer_params", JSON.readTree(pa.body()).path("kv_transfer_params"));
            Answer da = post(d, "/v1/completions", id, dLeg);
            long c = System.nanoTime();
            assertEquals(200, da.status(), da.body());
            prefill[i] = (b - a) / 1e6;
            decode[i] = (c - b) / 1e6;
            direct[i] = (c - a) / 1e6;
        }
        double directSeconds = (System.nanoTime() - t0) / 1e9;
        t0 = System.nanoTime();
        for (int i = 0; i < count; i++) {
            long a = System.nanoTime();
            Answer r = post(router, "/v1/completions", null, completion(prompt(), false));
            routed[i] = (System.nanoTime() - a) / 1e6;
            assertEquals(200, r.status(), r.body());
            seenPrefill[i] = timing(r, "prefill");
            seenDecode[i] = timing(r, "decode");
        }
        double routedSeconds = (System.nanoTime() - t0) / 1e9;
        double overhead = p50(routed) - (p50(prefill) + p50(decode));
        figure(String.format("router overhead (%d completions at c=1, same run): router p50 %.2f ms - (P leg p50 %.2f ms"
                + " + D leg p50 %.2f ms) = %.2f ms", count, p50(routed), p50(prefill), p50(decode), overhead));
        figure(String.format("requests/s at c=1: through the router %.1f, direct legs (client drives P then D) %.1f;"
                + " p50 %.2f ms vs %.2f ms", count / routedSeconds, count / directSeconds, p50(routed), p50(direct)));
        figure(String.format("the same routed requests by the router's own clock (Server-Timing p50): P leg %.2f ms,"
                + " D leg %.2f ms; so %.2f ms of the overhead is the router's own work and the client's extra hop",
                p50(seenPrefill), p50(seenDecode), p50(routed) - p50(seenPrefill) - p50(seenDecode)));
        // The overhead is a figure, not a bound: a wall-clock limit fails on a loaded machine (52.5 ms once under
        // stress-ng) without anything being wrong. What must hold whatever the machine: the legs the router
        // reports lie inside the request the client timed.
        for (int i = 0; i < count; i++) {
            assertTrue(seenPrefill[i] + seenDecode[i] <= routed[i] + SERVER_TIMING_ROUNDING_MS, "routed request " + i
                    + ": the router's legs (" + seenPrefill[i] + " + " + seenDecode[i] + " ms) inside the "
                    + routed[i] + " ms the client saw");
        }
    }

    /** Server-Timing durations carry three decimals: each leg is off by at most half of the last one. */
    private static final double SERVER_TIMING_ROUNDING_MS = 0.001;

    /** A leg's duration in ms from the answer's Server-Timing header. */
    private static double timing(Answer a, String leg) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile(leg + ";dur=([0-9.]+)").matcher(a.header("Server-Timing"));
        assertTrue(m.find(), a.header("Server-Timing"));
        return Double.parseDouble(m.group(1));
    }

    private static double p50(double[] values) {
        double[] v = values.clone();
        java.util.Arrays.sort(v);
        return v[v.length / 2];
    }

    @Test
    @Order(4)
    void aProducerWhoseLeasesLapseBeforeAnyPull_theRouterRetriesOnAnotherP_andTheAnswerIsRight() throws Exception {
        // p3's 3 ms leases lapse before nearly every pull reaches the slot: an idle P parks only until its
        // reaper's next deadline and zeroes an expired slot at the expiry. Nearly: on a loaded machine p3's loop
        // may not run for the few ms a pull takes, and then D's slot READ still finds the nonce, which proves p3
        // held the blocks for the whole READ; that answer is right and not retried. What the router promises is
        // the rest: every answer is the reference, and a pull that found p3's lease gone is retried elsewhere.
        ServiceProcess p3 = start("p3", Map.of("pd.lease.duration", "3ms", "pd.lease.max-lifetime", "3ms"));
        p3.awaitReady(READY);
        awaitRouterSees("p3 listed", "fleet-p3");
        for (String d : List.of("d1", "d2")) {
            FLEET.get(d).awaitProducers(SOON, "fleet-p3");
        }
        double before = router.metric("pd_router_retries_total", "reason", "lease_mismatch");
        int retried = 0;
        for (int i = 0; i < 60 && retried < 3; i++) {
            Answer a = routedMatchesReference(i % 2 == 0 ? completion(prompt(), i % 4 == 0)
                    : chat(prompt(), i % 4 == 1), i % 2 == 0 ? "/v1/completions" : "/v1/chat/completions");
            if (a.retries() > 0) {
                retried++;
                assertEquals(String.valueOf(a.retries()), a.header("Server-Timing").replaceAll(".*desc=\"(\\d+)\".*", "$1"));
                assertTrue(a.header("X-PD-Retry-Reasons").contains("lease_mismatch"), a.header("X-PD-Retry-Reasons"));
            }
        }
        assertEquals(3, retried, "requests whose first prefill went to p3 were retried");
        assertTrue(router.metric("pd_router_retries_total", "reason", "lease_mismatch") - before >= 3,
                "retries counted by reason");
        assertEquals(0, p3.status().path("producer").path("leases_live").asInt(), "p3 holds nothing");
        FLEET.remove("p3").close();
        router.awaitRegistry("p3 gone", v -> !v.toString().contains("fleet-p3"), SOON);
    }

    @Test
    @Order(5)
    void aDecoderKilled_pLeaseIsAbortedAtOnce_andTheRequestIsRetriedOnTheOtherD() throws Exception {
        double abortsBefore = router.metric("pd_router_aborts_total", "cause", "decode");
        FLEET.get("d2").kill();
        int retried = 0;
        for (int i = 0; i < 6; i++) {
            Answer a = routedMatchesReference(completion(prompt(), i % 2 == 1), "/v1/completions");
            assertEquals("fleet-d1", a.header("X-PD-Decoder"));
            retried += a.header("X-PD-Retry-Reasons").contains("decode_failed") ? 1 : 0;
        }
        assertTrue(retried >= 1, "a request went to the killed decoder before it left the registry");
        assertTrue(router.metric("pd_router_aborts_total", "cause", "decode") - abortsBefore >= retried);
        // The default lease is 30 s: leases free within a third of it were aborted, not left to expire.
        for (String p : List.of("p1", "p2")) {
            FLEET.get(p).awaitStatus("every lease released", s -> s.path("producer").path("leases_live").asInt() == 0,
                    Duration.ofSeconds(10));
        }
        FLEET.remove("d2").close();
        router.awaitRegistry("d2 gone", v -> !v.toString().contains("fleet-d2"), TTL.plus(SOON));
    }

    @Test
    @Order(6)
    void aProducerKilled_requestsKeepSucceedingOnTheOther() throws Exception {
        double before = router.metric("pd_router_retries_total", "reason", "prefill_failed");
        FLEET.get("p1").kill();
        long killed = System.nanoTime();
        int ok = 0;
        while (System.nanoTime() - killed < TTL.plusSeconds(2).toNanos() || ok < 10) {
            Answer a = routedMatchesReference(ok % 2 == 0 ? completion(prompt(), ok % 4 == 0)
                    : chat(prompt(), ok % 4 == 1), ok % 2 == 0 ? "/v1/completions" : "/v1/chat/completions");
            assertEquals("fleet-p2", a.header("X-PD-Producer"));
            ok++;
        }
        double retried = router.metric("pd_router_retries_total", "reason", "prefill_failed") - before;
        assertTrue(retried >= 1, "requests sent to the killed producer before it left the registry were retried");
        router.awaitRegistry("p1 gone", v -> !v.toString().contains("fleet-p1"), SOON);
        figure(String.format("a producer killed with SIGKILL: %d requests in the %.1f s after, all answered right by"
                + " the other producer; %.0f retried (prefill_failed) until p1 left the registry (etcd TTL %d s)", ok,
                (System.nanoTime() - killed) / 1e9, retried, TTL.toSeconds()));
        assertFalse(FLEET.get("p1").isAlive());
    }

    /** The router panels of k8s/monitoring/dashboard.json (DashboardMetricsQuarkusTest holds the others). */
    @Test
    @Order(7)
    void everyRouterMetricTheDashboardQueriesIsExportedByTheRouter() throws Exception {
        String metrics = router.get("/q/metrics").text();
        List<String> missing = new ArrayList<>();
        for (String name : io.pdconnector.deploy.Dashboard.metricNames()) {
            if (name.startsWith("pd_router_")
                    && !java.util.regex.Pattern.compile("(?m)^" + java.util.regex.Pattern.quote(name) + "[ {]")
                            .matcher(metrics).find()) {
                missing.add(name);
            }
        }
        assertEquals(List.of(), missing, "router metrics the dashboard queries that the router's /q/metrics lacks");
    }
}
