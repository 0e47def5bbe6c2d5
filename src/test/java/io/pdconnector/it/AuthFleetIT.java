package io.pdconnector.it;

import static io.pdconnector.it.ServiceProcess.READY;
import static io.pdconnector.it.ServiceProcess.TARGET;
import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.pdconnector.it.ServiceProcess.Reply;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Packaged services with auth on, real NIXL: a decoder whose static registry store presents the fleet's
 * peer token lists the producer and pulls from it (the router's and the engine's tokens doing their
 * legs); a decoder holding another peer token is refused by the producer (counted there) and never lists
 * it. And a service with auth on and a role without a token does not start.
 */
class AuthFleetIT {

    private static final Path LOGS = ServiceProcess.logsOf(AuthFleetIT.class);
    private static final String ROUTER = "it-router-0123456789abcdef";
    private static final String ENGINE = "it-engine-0123456789abcdef";
    private static final String PEER = "it-peer-0123456789abcdef";
    private static final String OPERATOR = "it-operator-0123456789abcdef";

    private static ServiceProcess p;
    private static ServiceProcess d;
    private static ServiceProcess stranger;
    private static ServiceProcess router;
    private static final List<ServiceProcess> ALL = new ArrayList<>();

    @BeforeAll
    static void startInstances() throws Exception {
        try {
            Path state = TARGET.resolve("it-state");
            Files.createDirectories(state);
            Map<String, String> producer = auth("it-auth-p", PEER);
            producer.put("pd.role", "producer");
            producer.put("pd.kv.num-blocks", "16");
            producer.put("pd.kv.max-num-seqs", "4");
            producer.put("pd.lease.state-dir", Files.createTempDirectory(state, "p-").toString());
            p = start("p", producer);
            d = start("d", consumer("it-auth-d", PEER));
            stranger = start("d-stranger", consumer("it-auth-stranger", "it-other-fleet-peer-0123456789"));
            Map<String, String> front = auth("it-auth-router", PEER);
            front.put("pd.role", "router");
            front.put("pd.registry.store", "static");
            front.put("pd.registry.static.peers", "127.0.0.1:" + p.port + ",127.0.0.1:" + d.port);
            front.put("pd.registry.static.refresh-interval", "300ms");
            router = start("router", front);
            for (ServiceProcess s : ALL) {
                s.awaitReady(READY);
                s.authorization(OPERATOR);
            }
        } catch (Throwable t) {
            stopInstances();
            throw t;
        }
    }

    @AfterAll
    static void stopInstances() {
        ALL.forEach(ServiceProcess::close);
    }

    private static ServiceProcess start(String name, Map<String, String> settings) throws Exception {
        ServiceProcess s = ServiceProcess.start(name, settings, LOGS);
        ALL.add(s);
        return s;
    }

    /** Auth on with the fleet's router, engine and operator tokens, and {@code peer} as the peer token. */
    private static Map<String, String> auth(String engineId, String peer) {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("pd.engine-id", engineId);
        m.put("pd.auth.enabled", "true");
        m.put("pd.auth.tokens.router", ROUTER);
        m.put("pd.auth.tokens.engine", ENGINE);
        m.put("pd.auth.tokens.peer", peer);
        m.put("pd.auth.tokens.operator", OPERATOR);
        return m;
    }

    private static Map<String, String> consumer(String engineId, String peer) {
        Map<String, String> m = auth(engineId, peer);
        m.put("pd.role", "consumer");
        m.put("pd.kv.shm-dir", ServiceProcess.TARGET.resolve("it-shm").toString());
        m.put("pd.registry.store", "static");
        m.put("pd.registry.static.peers", "127.0.0.1:" + p.port);
        m.put("pd.registry.static.refresh-interval", "300ms");
        m.put("pd.kv.num-blocks", "64");
        return m;
    }

    @Test
    void theStaticStorePresentsThePeerTokenAndEachLegItsRolesToken() throws Exception {
        d.awaitProducers(READY, "it-auth-p");

        int[] tokens = prompt(3, 40);
        Map<String, Object> prefill = Map.of("request_id", "auth-it-1", "token_ids", tokens,
                "kv_transfer_params", Map.of("do_remote_decode", true));
        assertEquals(401, p.authorization(null).post("/v1/producer/prefill", prefill).status());
        Reply params = p.authorization(ROUTER).post("/v1/producer/prefill", prefill);
        assertEquals(200, params.status(), params.toString());
        Map<String, Object> pull = new LinkedHashMap<>();
        pull.put("request_id", "auth-it-1");
        pull.put("token_ids", tokens);
        pull.put("kv_transfer_params", params.json().get("kv_transfer_params"));
        Reply pulled = d.authorization(ROUTER).post("/v1/consumer/pull?matches_reference=true", pull);
        assertEquals(200, pulled.status(), pulled.toString());
        assertEquals("received", pulled.json().path("state").asText(), pulled.toString());
        assertTrue(pulled.json().path("matches_reference").asBoolean(), pulled.toString());
        assertEquals(403, d.get("/v1/consumer/requests/auth-it-1/kv").status(), "the router does not read KV out");
        Reply kv = d.authorization(ENGINE).get("/v1/consumer/requests/auth-it-1/kv");
        assertEquals(200, kv.status(), kv.toString());
        assertTrue(kv.body().length > 0);
        p.authorization(OPERATOR);
        d.authorization(OPERATOR);
    }

    /** The router presents its router token to P and D: a client with the router token gets an answer. */
    @Test
    void aRouterWithAuthOnRoutesWithItsOwnToken() throws Exception {
        router.awaitProducers(READY, "it-auth-p");
        router.awaitRegistry("the decoder listed", v -> v.path("instances").findValuesAsText("engine_id")
                .contains("it-auth-d"), READY);
        Map<String, Object> completion = Map.of("model", "pd-connector-reference", "prompt", "the lease proves the bytes",
                "max_tokens", 4);
        assertEquals(401, router.authorization(null).post("/v1/completions", completion).status());
        double refusedByP = p.metric("pd_auth_refused_total", "role", "router");
        double refusedByD = d.metric("pd_auth_refused_total", "role", "router");
        Reply answer = router.authorization(ROUTER).post("/v1/completions", completion);
        assertEquals(200, answer.status(), answer.toString());
        assertTrue(!answer.json().path("choices").path(0).path("text").asText().isEmpty(), answer.toString());
        assertEquals(refusedByP, p.metric("pd_auth_refused_total", "role", "router"), "P refused none of the router's legs");
        assertEquals(refusedByD, d.metric("pd_auth_refused_total", "role", "router"), "D refused none of the router's legs");
        router.authorization(OPERATOR);
    }

    @Test
    void aDecoderWithAnotherFleetsPeerTokenIsRefusedAndNeverListsTheProducer() throws Exception {
        d.awaitProducers(READY, "it-auth-p"); // the same refreshes reached p from both decoders by then
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        double refused = 0;
        while (refused < 3 && System.nanoTime() < deadline) {
            refused = p.metric("pd_auth_refused_total", "reason", "unauthenticated", "role", "operator,peer");
            Thread.sleep(100);
        }
        assertTrue(refused >= 3, "p counted the stranger's fetches of /v1/registry/self: " + refused);
        JsonNode view = stranger.authorization(OPERATOR).get("/v1/registry").json();
        for (JsonNode i : view.path("instances")) {
            assertNotEquals("it-auth-p", i.path("engine_id").asText(), view.toString());
        }
        assertTrue(view.path("health").path("detail").asText().startsWith("0 of 1"), view.toString());
    }

    @Test
    void withAuthOnARoleWithoutATokenStopsTheStartAndSaysWhichKey() throws Exception {
        Map<String, String> settings = auth("it-auth-broken", PEER);
        settings.remove("pd.auth.tokens.operator");
        settings.put("pd.role", "consumer");
        try (ServiceProcess broken = ServiceProcess.start("no-operator-token", settings, LOGS)) {
            assertNotEquals(0, broken.awaitExit(READY), broken.tail());
            String log = Files.readString(broken.log);
            assertTrue(log.contains("pd.auth.tokens.operator is not set"), broken.tail());
            assertTrue(Arrays.stream(log.split("\n")).noneMatch(l -> l.contains("Listening on")), broken.tail());
        }
    }
}
