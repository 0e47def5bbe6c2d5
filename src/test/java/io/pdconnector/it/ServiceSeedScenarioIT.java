package io.pdconnector.it;

import static io.pdconnector.it.ServiceProcess.READY;
import static io.pdconnector.it.ServiceProcess.TARGET;
import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.pdconnector.it.ServiceProcess.Reply;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.reference.ReferenceEngine;
import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The seed scenario on the packaged service, real NIXL between separate processes, driven over
 * HTTP only, as a router drives it: prefill on P, forward P's {@code kv_transfer_params} verbatim
 * to D. P's lease is short and its pool small, so a lease that lapses unread frees blocks that the
 * next prompt gets (the pool reuses the last freed blocks first).
 *
 * <p>Five instances, started together: P with lease verification and P without; D verifying with
 * policy {@code fail}, D verifying with policy {@code recompute}, and D without verification (for
 * the unverified P). The only real-time waits are for leases to lapse, each bounded.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ServiceSeedScenarioIT {

    private static final Duration LEASE = Duration.ofSeconds(2);
    /** Bounds waits that the protocol ends by itself well within a lease (a reader's release). */
    private static final Duration SOON = Duration.ofSeconds(10);
    private static final int TOKENS = 40; // 3 blocks of 16 tokens, the last one partly filled
    private static final ModelGeometry GEOMETRY = ModelGeometry.DEFAULT;
    private static final ReferenceEngine REFERENCE = new ReferenceEngine(GEOMETRY);
    private static final String LEASE_CHECK_FAILURES = "nixl_num_lease_check_failures_total";

    private static ServiceProcess pOn;
    private static ServiceProcess pOff;
    private static ServiceProcess dFail;
    private static ServiceProcess dRecompute;
    private static ServiceProcess dOff;
    private static final List<ServiceProcess> ALL = new ArrayList<>();
    /** What each decoder answered the router: received, recomputed or declined, counted from the replies. */
    private static final Map<ServiceProcess, Map<String, Integer>> ANSWERED = new LinkedHashMap<>();
    /** Of those, the answers for a failed lease check (409 lease_mismatch, or recomputed for lease_mismatch). */
    private static final Map<ServiceProcess, Integer> LEASE_DECLINES = new LinkedHashMap<>();
    private static long comparedBytes;

    @BeforeAll
    static void startInstances() throws Exception {
        Path logs = ServiceProcess.logsOf(ServiceSeedScenarioIT.class);
        try {
            pOn = start(logs, "p-on", producer(true));
            pOff = start(logs, "p-off", producer(false));
            String producers = "127.0.0.1:" + pOn.port + ",127.0.0.1:" + pOff.port;
            dFail = start(logs, "d-fail", consumer(true, "fail", producers));
            dRecompute = start(logs, "d-recompute", consumer(true, "recompute", producers));
            dOff = start(logs, "d-off", consumer(false, "fail", producers));
            for (ServiceProcess s : ALL) {
                s.awaitReady(READY);
            }
            for (ServiceProcess d : List.of(dFail, dRecompute, dOff)) {
                d.awaitProducers(READY, "it-p-on", "it-p-off");
            }
            for (ServiceProcess s : ALL) {
                LEASE_DECLINES.put(s, 0);
                ANSWERED.put(s, new LinkedHashMap<>());
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

    private static ServiceProcess start(Path logs, String name, Map<String, String> settings) throws Exception {
        settings.put("pd.engine-id", "it-" + name);
        ServiceProcess s = ServiceProcess.start(name, settings, logs);
        ALL.add(s);
        return s;
    }

    private static Map<String, String> producer(boolean verification) throws Exception {
        Path state = TARGET.resolve("it-state");
        Files.createDirectories(state);
        Map<String, String> m = new LinkedHashMap<>();
        m.put("pd.role", "producer");
        m.put("pd.kv.num-blocks", "16");
        m.put("pd.kv.max-num-seqs", "4");
        m.put("pd.lease.duration", LEASE.toMillis() + "ms");
        m.put("pd.lease.verification", Boolean.toString(verification));
        m.put("pd.lease.state-dir", Files.createTempDirectory(state, "p-").toString());
        return m;
    }

    /** A decoder that knows the producers at {@code producers} (host:port, comma-separated) through the static registry. */
    private static Map<String, String> consumer(boolean verification, String policy, String producers) {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("pd.role", "consumer");
        m.put("pd.kv.shm-dir", ServiceProcess.TARGET.resolve("it-shm").toString()); // D's KV files, not in /dev/shm
        m.put("pd.registry.store", "static");
        m.put("pd.registry.static.peers", producers);
        m.put("pd.registry.static.refresh-interval", "500ms");
        m.put("pd.kv.num-blocks", "64");
        m.put("pd.lease.duration", LEASE.toMillis() + "ms");
        m.put("pd.consumer.heartbeat-interval", "250ms");
        m.put("pd.lease.verification", Boolean.toString(verification));
        m.put("pd.consumer.failure-policy", policy);
        return m;
    }

    // ---------------------------------------------------------------------------------------------

    @Test
    @Order(1)
    void control_pulledAtOnce_everyDecoderReceivesExactlyThePromptsKvAndReleasesP() throws Exception {
        record Pair(ServiceProcess p, ServiceProcess d) {
        }
        int seed = 10;
        for (Pair pair : List.of(new Pair(pOn, dFail), new Pair(pOn, dRecompute), new Pair(pOff, dOff))) {
            int[] tokens = prompt(seed++, TOKENS);
            String id = "control-" + pair.d().name;
            double releasedBefore = pair.p().metric("pd_leases_released_by_readers_total");
            JsonNode params = prefill(pair.p(), id, tokens);
            assertEquals(pair.p() == pOn, params.has("remote_lease_nonce"),
                    "lease fields exported exactly when P verifies: " + params);

            JsonNode pulled = pull(pair.d(), id, tokens, params, 200);

            assertEquals("received", pulled.path("state").asText(), pulled.toString());
            assertTrue(pulled.path("matches_reference").asBoolean(), pulled.toString());
            assertEquals(3 * GEOMETRY.blockBytes(1), pulled.path("bytes").asLong());
            assertKvEquals(referenceKv(tokens), readKv(pair.d(), id, pulled), pair.d().name + " " + id);
            awaitMetric(pair.p(), "pd_leases_released_by_readers_total", releasedBefore + 1);
            assertHostTransportReported(pair.d(), pair.p());
        }
    }

    /** D learned from UCX's own report which transport its READs of P's host memory took, and exports it. */
    private static void assertHostTransportReported(ServiceProcess d, ServiceProcess p) throws Exception {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("^pd_kv_read_transport\\{([^}]*)}\\s+1\\.0$",
                java.util.regex.Pattern.MULTILINE).matcher(d.get("/q/metrics").text());
        List<String> transports = new ArrayList<>();
        while (m.find()) {
            String labels = m.group(1);
            if (labels.contains("peer=\"it-" + p.name + "\"")) {
                assertTrue(labels.contains("kv_memory=\"host\""), labels);
                assertTrue(labels.contains("decode_rank=\"0\"") && labels.contains("prefill_rank=\"0\""), labels);
                java.util.regex.Matcher t = java.util.regex.Pattern.compile("transport=\"([^\"]*)\"").matcher(labels);
                assertTrue(t.find(), labels);
                transports.add(t.group(1));
            }
        }
        assertEquals(1, transports.size(), d.name + " reports one transport for " + p.name + ": " + transports);
        for (String t : transports.getFirst().split("\\+")) {
            assertTrue(List.of("cma", "tcp", "posix", "sysv", "xpmem", "knem").contains(t),
                    "a host transport UCX names, not " + transports);
        }
    }

    @Test
    @Order(2)
    void lapseAndReuse_verifyingDecoderWithPolicyFail_declinesLeaseMismatch() throws Exception {
        Lapsed a = lapseAndReuse(pOn, "fail-a", 20);
        double failuresBefore = dFail.metric(LEASE_CHECK_FAILURES);
        double declinesBefore = dFail.metric("pd_pull_declines_total", "reason", "lease_mismatch");

        JsonNode problem = pull(dFail, "fail-a", a.tokens(), a.params(), 409);

        assertEquals("lease_mismatch", problem.path("reason").asText(), problem.toString());
        assertEquals("fail-a", problem.path("request_id").asText(), problem.toString());
        assertEquals(failuresBefore + 1, dFail.metric(LEASE_CHECK_FAILURES));
        assertEquals(declinesBefore + 1, dFail.metric("pd_pull_declines_total", "reason", "lease_mismatch"));
        assertEquals(404, dFail.get("/v1/consumer/requests/fail-a/kv").status(), "a declined pull holds nothing");
    }

    @Test
    @Order(3)
    void lapseAndReuse_verifyingDecoderWithPolicyRecompute_endsWithThePromptsOwnKv() throws Exception {
        Lapsed a = lapseAndReuse(pOn, "recompute-a", 30);
        double failuresBefore = dRecompute.metric(LEASE_CHECK_FAILURES);
        double recomputedBefore = dRecompute.metric("pd_pulls_total", "outcome", "recomputed");

        JsonNode pulled = pull(dRecompute, "recompute-a", a.tokens(), a.params(), 200);

        assertEquals("recomputed", pulled.path("state").asText(), pulled.toString());
        assertEquals("lease_mismatch", pulled.path("reason").asText(), pulled.toString());
        assertTrue(pulled.path("matches_reference").asBoolean(), pulled.toString());
        assertEquals(failuresBefore + 1, dRecompute.metric(LEASE_CHECK_FAILURES));
        assertEquals(recomputedBefore + 1, dRecompute.metric("pd_pulls_total", "outcome", "recomputed"));
        assertKvEquals(referenceKv(a.tokens()), readKv(dRecompute, "recompute-a", pulled), "recomputed KV of A");
    }

    @Test
    @Order(4)
    void lapseAndReuse_unverifiedOnBothSides_receivesSomeoneElsesKvAndReportsSuccess() throws Exception {
        Lapsed a = lapseAndReuse(pOff, "off-a", 40);
        assertFalse(a.params().has("remote_lease_nonce"), "an unverified P exports no lease: " + a.params());
        double failuresBefore = dOff.metric(LEASE_CHECK_FAILURES);

        JsonNode pulled = pull(dOff, "off-a", a.tokens(), a.params(), 200);

        assertEquals("received", pulled.path("state").asText(), "the hole: success reported " + pulled);
        assertFalse(pulled.path("matches_reference").asBoolean(), "yet the KV is not A's: " + pulled);
        byte[] kv = readKv(dOff, "off-a", pulled);
        assertKvEquals(referenceKv(a.reuser()), kv, "the bytes D took for A are exactly B's KV");
        assertEquals(failuresBefore, dOff.metric(LEASE_CHECK_FAILURES), "nothing checked, nothing counted");
    }

    @Test
    @Order(5)
    void requestIdReuse_staleParamsOfAttempt1AreDeclinedAndAttempt2StaysHeldAndPullable() throws Exception {
        awaitIdle(pOn);
        int[] prompt1 = prompt(50, TOKENS);
        int[] prompt2 = prompt(51, TOKENS);
        long sent = System.nanoTime();
        JsonNode attempt1 = prefill(pOn, "r", prompt1);
        awaitLapse(pOn, sent);
        JsonNode attempt2 = prefill(pOn, "r", prompt2);
        assertEquals(attempt1.path("remote_block_ids"), attempt2.path("remote_block_ids"),
                "attempt 2 reuses attempt 1's blocks");
        assertNotEquals(attempt1.path("remote_lease_nonce").asLong(), attempt2.path("remote_lease_nonce").asLong(),
                "a new attempt, a new nonce (L1)");
        double released = pOn.metric("pd_leases_released_by_readers_total");

        JsonNode problem = pull(dFail, "r", prompt1, attempt1, 409);

        assertEquals("lease_mismatch", problem.path("reason").asText(), problem.toString());
        JsonNode p = pOn.status().path("producer");
        assertEquals(1, p.path("leases_live").asInt(), "attempt 2 is still held after the stale pull: " + p);
        assertEquals(released, pOn.metric("pd_leases_released_by_readers_total"), "the stale pull released nothing");

        JsonNode pulled = pull(dFail, "r", prompt2, attempt2, 200);

        assertEquals("received", pulled.path("state").asText(), pulled.toString());
        assertTrue(pulled.path("matches_reference").asBoolean(), pulled.toString());
        assertKvEquals(referenceKv(prompt2), readKv(dFail, "r", pulled), "attempt 2's KV");
        awaitMetric(pOn, "pd_leases_released_by_readers_total", released + 1);
    }

    @Test
    @Order(6)
    void atTheEnd_leaseCheckFailuresCountExactlyTheLeaseDeclines_andEveryInstanceIsIdle() throws Exception {
        for (ServiceProcess d : List.of(dFail, dRecompute, dOff)) {
            assertEquals(LEASE_DECLINES.get(d).doubleValue(), d.metric(LEASE_CHECK_FAILURES),
                    d.name + ": " + LEASE_CHECK_FAILURES + " vs the lease declines it answered");
            assertEquals(LEASE_DECLINES.get(d).doubleValue(),
                    d.metric("pd_pull_declines_total", "reason", "lease_mismatch"), d.name + " declines by reason");
            for (String outcome : List.of("received", "recomputed", "declined")) {
                assertEquals(ANSWERED.get(d).getOrDefault(outcome, 0).doubleValue(),
                        d.metric("pd_pulls_total", "outcome", outcome), d.name + " pd_pulls_total{outcome=" + outcome
                                + "} vs its answers " + ANSWERED.get(d));
            }
        }
        assertEquals(2, LEASE_DECLINES.get(dFail), "the scenarios ran: " + names(LEASE_DECLINES));
        assertEquals(1, LEASE_DECLINES.get(dRecompute), "the scenarios ran: " + names(LEASE_DECLINES));
        Duration deadline = LEASE.plus(SOON);
        for (ServiceProcess p : List.of(pOn, pOff)) {
            p.awaitStatus("idle producer", s -> s.path("producer").path("leases_live").asInt() == 0
                    && s.path("producer").path("slots_in_use").asInt() == 0
                    && s.path("producer").path("blocks_in_use").asInt() == 0, deadline);
        }
        for (ServiceProcess d : List.of(dFail, dRecompute, dOff)) {
            d.awaitStatus("idle consumer", s -> s.path("consumer").path("pulls_live").asInt() == 0
                    && s.path("consumer").path("blocks_in_use").asInt() == 0, deadline);
        }
        for (ServiceProcess s : ALL) {
            assertTrue(s.isAlive(), s.name + " is still running");
        }
    }

    // ---------------------------------------------------------------------------------------------

    /** A's saved params and prompt, and the prompt of B, the request that got A's blocks. */
    private record Lapsed(JsonNode params, int[] tokens, int[] reuser) {
    }

    /**
     * Prefill A; nobody pulls it, so nobody heartbeats it; wait until P has reaped it; prefill B
     * of the same length, which gets A's blocks in A's order.
     */
    private static Lapsed lapseAndReuse(ServiceProcess p, String id, int seed) throws Exception {
        awaitIdle(p); // so that A's blocks are the ones freed last when A lapses
        int[] a = prompt(seed, TOKENS);
        int[] b = prompt(seed + 1, TOKENS);
        long sent = System.nanoTime();
        JsonNode params = prefill(p, id, a);
        awaitLapse(p, sent);
        JsonNode reuse = prefill(p, id + "-reuser", b);
        assertEquals(params.path("remote_block_ids"), reuse.path("remote_block_ids"), "B reuses A's blocks");
        return new Lapsed(params, a, b);
    }

    /** Waits until P holds nothing; checks that it did not reap the lease before its duration. */
    private static void awaitLapse(ServiceProcess p, long prefillSentNanos) throws Exception {
        awaitIdle(p);
        Duration held = Duration.ofNanos(System.nanoTime() - prefillSentNanos);
        assertTrue(held.compareTo(LEASE.minusMillis(100)) >= 0, "P reaped the lease after " + held + ", before "
                + LEASE);
    }

    private static void awaitIdle(ServiceProcess p) throws Exception {
        p.awaitStatus("no lease held", s -> s.path("producer").path("leases_live").asInt() == 0
                && s.path("producer").path("blocks_in_use").asInt() == 0, LEASE.plus(SOON));
    }

    private static JsonNode prefill(ServiceProcess p, String id, int[] tokens) throws Exception {
        Reply r = p.post("/v1/producer/prefill", Map.of("request_id", id, "token_ids", tokens,
                "kv_transfer_params", Map.of("do_remote_decode", true)));
        assertEquals(200, r.status(), p.name + " prefill " + id + ": " + r);
        JsonNode params = r.json().path("kv_transfer_params");
        assertEquals(id, params.path("remote_request_id").asText(), params.toString());
        return params;
    }

    /** POST /v1/consumer/pull with P's params exactly as P returned them; the body of the expected status. */
    private static JsonNode pull(ServiceProcess d, String id, int[] tokens, JsonNode params, int status)
            throws Exception {
        Reply r = d.post("/v1/consumer/pull?matches_reference=true&kv_checksum=true", Map.of("request_id", id, "token_ids", tokens,
                "kv_transfer_params", params));
        JsonNode body = r.json();
        ANSWERED.get(d).merge(r.status() == 409 ? "declined" : body.path("state").asText(), 1, Integer::sum);
        if ("lease_mismatch".equals(body.path("reason").asText())) {
            LEASE_DECLINES.merge(d, 1, Integer::sum);
        }
        assertEquals(status, r.status(), d.name + " pull " + id + ": " + r);
        return body;
    }

    /** GET .../kv (which also releases D's blocks); checks its checksum against the pull's answer. */
    private static byte[] readKv(ServiceProcess d, String id, JsonNode pulled) throws Exception {
        Reply r = d.get("/v1/consumer/requests/" + id + "/kv");
        assertEquals(200, r.status(), d.name + " kv of " + id + ": " + r);
        assertEquals(pulled.path("bytes").asLong(), r.body().length, "bytes");
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(r.body());
        assertEquals(pulled.path("kv_checksum").asText(), String.format("crc32c:%08x", crc.getValue()),
                "the checksum the pull reported is of these bytes");
        return r.body();
    }

    /** The prompt's KV as the reference engine computes it here, block after block (D is TP1). */
    private static byte[] referenceKv(int[] tokens) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        IntStream.range(0, GEOMETRY.blocksFor(tokens.length))
                .forEach(i -> out.writeBytes(REFERENCE.expectedBlock(tokens, i, 1, 0)));
        return out.toByteArray();
    }

    private static void assertKvEquals(byte[] expected, byte[] actual, String what) {
        assertEquals(expected.length, actual.length, what + ": length");
        int at = Arrays.mismatch(expected, actual);
        assertEquals(-1, at, what + ": first differing byte at " + at + " (block " + (at / GEOMETRY.blockBytes(1))
                + ")");
        comparedBytes += actual.length;
    }

    @AfterAll
    static void report() {
        System.out.printf("ServiceSeedScenarioIT: %d KV bytes compared with the reference; answers %s; lease "
                + "declines %s%n", comparedBytes, names(ANSWERED), names(LEASE_DECLINES));
    }

    private static Map<String, Object> names(Map<ServiceProcess, ?> byProcess) {
        Map<String, Object> m = new LinkedHashMap<>();
        byProcess.forEach((k, v) -> m.put(k.name, v));
        return m;
    }

    private static void awaitMetric(ServiceProcess s, String metric, double expected) throws Exception {
        long end = System.nanoTime() + SOON.toNanos();
        double value = s.metric(metric);
        while (value != expected && System.nanoTime() < end) {
            Thread.sleep(50);
            value = s.metric(metric);
        }
        assertEquals(expected, value, s.name + " " + metric);
    }
}
