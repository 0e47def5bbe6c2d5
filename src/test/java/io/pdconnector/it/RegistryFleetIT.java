package io.pdconnector.it;

import static io.pdconnector.it.ServiceProcess.READY;
import static io.pdconnector.it.ServiceProcess.TARGET;
import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.pdconnector.it.ServiceProcess.Reply;
import io.pdconnector.testing.EtcdCluster;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * A fleet on a real three-member etcd cluster on loopback: two producers and two decoders, each its
 * own packaged service process with real NIXL, finding each other only through etcd. What an
 * operator would check: discovery, a killed producer leaving by itself, a restarted one served
 * without a READ through its dead agent, one etcd member down unnoticed, all of etcd down survived
 * and recovered from. The figures the README quotes are written to
 * {@code target/it-logs/RegistryFleetIT/figures.txt}.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RegistryFleetIT {

    /**
     * The service's default: one etcd member down must go unnoticed, and that holds only while a failover fits
     * in the TTL (a 3 s TTL tolerates about 2 s of keep-alive silence, less than an election with the client's
     * move to another member takes on a loaded machine: docs/operations.md, "Sizing pd.registry.etcd.ttl").
     */
    private static final Duration TTL = EtcdCluster.serviceDefaultTtl();
    /** Bounds what the registry ends by itself: a TTL, a watch event, a reconnect with backoff. */
    private static final Duration SOON = Duration.ofSeconds(20);
    private static final int TOKENS = 40;
    private static final Path LOGS = ServiceProcess.logsOf(RegistryFleetIT.class);
    private static final String FAILED_TRANSFERS = "nixl_num_failed_transfers_total";

    private static EtcdCluster etcd;
    private static final Map<String, ServiceProcess> FLEET = new LinkedHashMap<>();
    private static final Map<String, Path> STATE = new LinkedHashMap<>();
    private static int seed = 100;

    @BeforeAll
    static void startFleet() throws Exception {
        Files.createDirectories(LOGS);
        Files.deleteIfExists(LOGS.resolve("figures.txt"));
        etcd = EtcdCluster.start("fleet", 3, Duration.ofSeconds(30));
        try {
            for (String name : List.of("p1", "p2", "d1", "d2")) {
                start(name);
            }
            for (ServiceProcess s : FLEET.values()) {
                s.awaitReady(READY);
            }
        } catch (Throwable t) {
            stopFleet();
            throw t;
        }
    }

    @AfterAll
    static void stopFleet() {
        FLEET.values().forEach(ServiceProcess::close);
        if (etcd != null) {
            etcd.close();
        }
    }

    private static ServiceProcess start(String name) throws Exception {
        Map<String, String> m = new LinkedHashMap<>();
        boolean producer = name.startsWith("p");
        m.put("pd.engine-id", "fleet-" + name);
        m.put("pd.role", producer ? "producer" : "consumer");
        m.put("pd.kv.num-blocks", producer ? "32" : "64");
        m.put("pd.kv.max-num-seqs", "8");
        m.put("pd.kv.shm-dir", TARGET.resolve("it-shm").toString());
        m.put("pd.registry.store", "etcd");
        m.put("pd.registry.etcd.endpoints", String.join(",", etcd.clientUrls()));
        m.put("pd.registry.etcd.ttl", TTL.toMillis() + "ms");
        m.put("pd.registry.etcd.max-backoff", "1s");
        m.put("pd.registry.etcd.call-timeout", "2s");
        m.put("pd.registry.publish-min-interval", "500ms");
        if (producer) {
            Path state = STATE.computeIfAbsent(name, n -> TARGET.resolve("it-state").resolve("fleet-" + n));
            Files.createDirectories(state);
            m.put("pd.lease.state-dir", state.toString());
        }
        ServiceProcess s = ServiceProcess.start(name, m, LOGS);
        FLEET.put(name, s);
        return s;
    }

    private static ServiceProcess of(String name) {
        return FLEET.get(name);
    }

    private static void figure(String line) throws Exception {
        System.out.println("FIGURE " + line);
        Files.writeString(LOGS.resolve("figures.txt"), line + System.lineSeparator(), StandardCharsets.UTF_8,
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }

    /** Prefill on p, pull on d, check the KV is the prompt's, release D's blocks; returns the pull's pull_ms. */
    private static double roundTrip(ServiceProcess p, ServiceProcess d, String id) throws Exception {
        int[] tokens = prompt(seed++, TOKENS);
        Reply r = d.pull(id, tokens, p.prefill(id, tokens));
        assertEquals(200, r.status(), d.name + " pull " + id + " from " + p.name + ": " + r);
        JsonNode body = r.json();
        assertEquals("received", body.path("state").asText(), body.toString());
        assertTrue(body.path("matches_reference").asBoolean(), body.toString());
        assertEquals(204, d.delete("/v1/consumer/requests/" + id).status());
        return body.path("timings").path("pull_ms").asDouble();
    }

    private static boolean lists(JsonNode view, String engineId) {
        for (JsonNode i : view.path("instances")) {
            if (i.path("engine_id").asText().equals(engineId)) {
                return true;
            }
        }
        return false;
    }

    private static String epochOf(JsonNode view, String engineId) {
        for (JsonNode i : view.path("instances")) {
            if (i.path("engine_id").asText().equals(engineId)) {
                return i.path("epoch").asText();
            }
        }
        return "";
    }

    // ---------------------------------------------------------------------------------------------

    @Test
    @Order(1)
    void discovery_everyDecoderPullsFromEveryProducer_andRecordWritesStayBounded() throws Exception {
        for (String d : List.of("d1", "d2")) {
            of(d).awaitProducers(SOON, "fleet-p1", "fleet-p2");
        }
        JsonNode view = of("p1").awaitRegistry("the whole fleet listed", v -> lists(v, "fleet-p2")
                && lists(v, "fleet-d1") && lists(v, "fleet-d2"), SOON);
        assertEquals("etcd", view.path("store").asText());
        int n = 0;
        for (String p : List.of("p1", "p2")) {
            for (String d : List.of("d1", "d2")) {
                roundTrip(of(p), of(d), "discover-" + p + "-" + d + "-" + n++);
            }
        }
        for (String d : List.of("d1", "d2")) {
            assertEquals(0, of(d).metric("pd_handshakes_on_pull_total"), d + ": every producer was loaded ahead");
        }

        double writesBefore = of("p1").metric("pd_registry_writes_total");
        long start = System.nanoTime();
        int pulls = 60;
        for (int i = 0; i < pulls; i++) {
            roundTrip(of("p1"), of(i % 2 == 0 ? "d1" : "d2"), "load-" + i);
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        double writes = of("p1").metric("pd_registry_writes_total") - writesBefore;
        figure(String.format("registry writes of a producer under load: %.0f writes in %.1f s of %d prefill+pull"
                + " round trips (%.1f pulls/s): %.2f writes/s (publish-min-interval 500ms)", writes, seconds, pulls,
                pulls / seconds, writes / seconds));
        assertTrue(writes / seconds <= 2.0 + 2.0 / seconds, "capacity writes are rate-limited: " + writes);
    }

    @Test
    @Order(2)
    void oneEtcdMemberDown_theFleetDoesNotNotice() throws Exception {
        double handshakesBefore = of("d1").metric("pd_handshakes_total");
        etcd.stop(0);
        long end = System.nanoTime() + TTL.multipliedBy(2).toNanos();
        int i = 0;
        while (System.nanoTime() < end && i < 40) {
            roundTrip(of(i % 2 == 0 ? "p1" : "p2"), of("d1"), "one-down-" + i++);
            Thread.sleep(100);
        }
        JsonNode view = of("d1").get("/v1/registry").json();
        assertTrue(lists(view, "fleet-p1") && lists(view, "fleet-p2"), "nobody left d1's view: " + view);
        assertTrue(view.path("health").path("reachable").asBoolean(), view.toString());
        assertEquals(handshakesBefore, of("d1").metric("pd_handshakes_total"), "no producer was dropped and reloaded");
        etcd.start(0);
        etcd.awaitHealthy(Duration.ofSeconds(30));
    }

    @Test
    @Order(3)
    void allOfEtcdDown_instancesServeTheLastView_thenRepublishAndWatchAgain() throws Exception {
        for (int m = 0; m < etcd.size(); m++) {
            etcd.stop(m);
        }
        of("d1").awaitRegistry("etcd reported unreachable", v -> !v.path("health").path("reachable").asBoolean(),
                SOON);
        Thread.sleep(TTL.plusSeconds(1).toMillis()); // every etcd lease would have expired by now
        for (int i = 0; i < 6; i++) {
            roundTrip(of(i % 2 == 0 ? "p1" : "p2"), of(i % 3 == 0 ? "d2" : "d1"), "outage-" + i);
        }
        assertEquals(200, of("d1").get("/q/health/ready").status(), "an etcd outage does not take D out of service");
        JsonNode view = of("d2").get("/v1/registry").json();
        assertTrue(lists(view, "fleet-p1") && lists(view, "fleet-p2"), "the last view is kept: " + view);

        for (int m = 0; m < etcd.size(); m++) {
            etcd.start(m);
        }
        etcd.awaitHealthy(Duration.ofSeconds(30));
        for (String s : List.of("p1", "p2", "d1", "d2")) {
            of(s).awaitRegistry("etcd reachable again", v -> v.path("health").path("reachable").asBoolean()
                    && v.path("health").path("own_published").asBoolean(), SOON);
        }

        // A producer that starts now sees every record, so each was written again after the outage, and
        // a decoder that never contacted it serves it: the watches are back.
        long started = System.nanoTime();
        ServiceProcess p3 = start("p3");
        p3.awaitReady(READY);
        long ready = System.nanoTime();
        p3.awaitRegistry("every instance republished", v -> lists(v, "fleet-p1") && lists(v, "fleet-p2")
                && lists(v, "fleet-d1") && lists(v, "fleet-d2"), SOON);
        of("d2").awaitProducers(SOON, "fleet-p3");
        long listed = System.nanoTime();
        double first = roundTrip(p3, of("d2"), "p3-first");
        long served = System.nanoTime();
        double[] steady = new double[20];
        for (int i = 0; i < steady.length; i++) {
            steady[i] = roundTrip(p3, of("d2"), "p3-steady-" + i);
        }
        Arrays.sort(steady);
        double median = steady[steady.length / 2];
        assertEquals(0, of("d2").metric("pd_handshakes_on_pull_total"), "p3 was loaded before its first pull");
        figure(String.format("new producer to first pull served by a decoder that never contacted it: process start"
                + " %.1f s -> ready +%.1f s -> listed on D +%.2f s -> first pull answered +%.2f s", 0.0,
                (ready - started) / 1e9, (listed - ready) / 1e9, (served - listed) / 1e9));
        figure(String.format("first-pull latency / steady-state pull latency (pull_ms, 40 tokens, 3 blocks, real NIXL):"
                + " %.2f ms / %.2f ms (median of %d) = %.2f", first, median, steady.length, first / median));
    }

    @Test
    @Order(4)
    void aProducerKilledWithSigkill_leavesEveryViewWithinItsTtl_andNoPullGoesToIt() throws Exception {
        int[] tokens = prompt(seed++, TOKENS);
        JsonNode params = of("p2").prefill("orphan", tokens);
        double failedBefore = of("d1").metric(FAILED_TRANSFERS);
        long killed = System.nanoTime();
        of("p2").kill();
        for (String d : List.of("d1", "d2")) {
            of(d).awaitRegistry("p2 gone", v -> !lists(v, "fleet-p2"), TTL.plus(SOON));
        }
        double gone = (System.nanoTime() - killed) / 1e9;
        figure(String.format("a producer killed with SIGKILL left both decoders' views after %.1f s (etcd TTL %d s)",
                gone, TTL.toSeconds()));
        assertTrue(gone <= TTL.toSeconds() + 5, "gone within TTL + margin: " + gone);

        Reply r = of("d1").pull("orphan", tokens, params);
        assertEquals(409, r.status(), r.toString());
        assertEquals("unknown_peer", r.json().path("reason").asText());
        assertEquals(failedBefore, of("d1").metric(FAILED_TRANSFERS), "no READ was posted to the dead producer");
        FLEET.remove("p2").close();
    }

    @Test
    @Order(5)
    void aRestartedProducer_newEpoch_isServedWithoutAReadThroughItsOldAgent() throws Exception {
        int[] tokens = prompt(seed++, TOKENS);
        JsonNode old = of("p1").prefill("before-restart", tokens);
        String oldEpoch = epochOf(of("d1").get("/v1/registry").json(), "fleet-p1");
        double failedBefore = of("d1").metric(FAILED_TRANSFERS);
        FLEET.remove("p1").close();
        ServiceProcess p1 = start("p1");
        p1.awaitReady(READY);
        of("d1").awaitRegistry("p1's new epoch", v -> lists(v, "fleet-p1")
                && !epochOf(v, "fleet-p1").equals(oldEpoch), SOON);

        Reply stale = of("d1").pull("before-restart", tokens, old);
        assertEquals(409, stale.status(), "params of the old incarnation are not P's to give: " + stale);
        // its params name the old address (peer_mismatch) or, at the same address, blocks now leased to no one
        assertTrue(List.of("lease_mismatch", "peer_mismatch").contains(stale.json().path("reason").asText()),
                stale.toString());
        roundTrip(p1, of("d1"), "after-restart");
        assertEquals(failedBefore, of("d1").metric(FAILED_TRANSFERS), "no READ through the old agent failed");
    }
}
