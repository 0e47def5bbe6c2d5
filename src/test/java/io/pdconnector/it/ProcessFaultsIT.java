package io.pdconnector.it;

import static io.pdconnector.it.ServiceProcess.READY;
import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.pdconnector.it.ServiceProcess.Reply;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Faults an operator meets, on packaged services as OS processes with real NIXL: a decoder killed
 * while it holds leases, a producer frozen (SIGSTOP) past its lease and thawed, a producer killed
 * during the decoders' READs. What must hold: no pull is ever answered with KV that is not its
 * prompt's, and everything a dead or frozen peer held comes back.
 */
class ProcessFaultsIT {

    private static final Duration LEASE = Duration.ofSeconds(2);
    private static final Path LOGS = ServiceProcess.logsOf(ProcessFaultsIT.class);
    private static final AtomicInteger SEED = new AtomicInteger(500);

    private ServiceProcess p;
    private ServiceProcess d;

    private Map<String, String> pm;
    private Map<String, String> dm;

    private void startPair(String name) throws Exception {
        pm = PairSettings.producer("faults-p-" + name, "faults-" + name, 64, 16, LEASE);
        p = ServiceProcess.start("p-" + name, pm, LOGS);
        dm = PairSettings.consumer("faults-d-" + name, "127.0.0.1:" + p.port, 128, LEASE);
        dm.put("pd.consumer.heartbeat-interval", "250ms");
        dm.put("pd.consumer.pull-timeout", "5s");
        dm.put("pd.registry.static.refresh-interval", "500ms");
        d = ServiceProcess.start("d-" + name, dm, LOGS);
        p.awaitReady(READY);
        d.awaitReady(READY);
        d.awaitProducers(READY, "faults-p-" + name);
    }

    @AfterEach
    void stop() {
        for (ServiceProcess s : new ServiceProcess[] {p, d}) {
            if (s != null) {
                s.close();
            }
        }
    }

    /** A pull's answer is its prompt's KV, or no KV: never someone else's. */
    private static String judge(Reply r) {
        if (r.status() == 409) {
            return "declined:" + r.json().path("reason").asText();
        }
        assertEquals(200, r.status(), r.toString());
        JsonNode body = r.json();
        assertTrue(body.path("matches_reference").asBoolean(), "a pull answered with KV that is not its prompt's: "
                + body);
        return body.path("state").asText();
    }

    private static void awaitMetric(ServiceProcess s, String metric, double atLeast, Duration deadline)
            throws Exception {
        long end = System.nanoTime() + deadline.toNanos();
        double last = s.metric(metric);
        while (last < atLeast && System.nanoTime() < end) {
            Thread.sleep(100);
            last = s.metric(metric);
        }
        assertTrue(last >= atLeast, s.name + " " + metric + " = " + last + ", expected at least " + atLeast);
    }

    @Test
    void aDecoderKilledWhileItHoldsLeases_producerReapsThemAndCountsThem() throws Exception {
        startPair("dkill");
        double expiredBefore = p.metric("nixl_num_kv_expired_reqs_total");
        int leases = 6;
        for (int i = 0; i < leases; i++) {
            p.prefill("held-" + i, prompt(SEED.getAndIncrement(), 40));
        }
        assertEquals(leases, p.status().path("producer").path("leases_live").asInt());
        d.kill();
        awaitMetric(p, "nixl_num_kv_expired_reqs_total", expiredBefore + leases, LEASE.plusSeconds(10));
        JsonNode status = p.awaitStatus("every lease reaped", s -> s.path("producer").path("leases_live").asInt() == 0
                && s.path("producer").path("blocks_in_use").asInt() == 0, Duration.ofSeconds(10));
        assertEquals(0, status.path("producer").path("slots_in_use").asInt(), status.toString());
    }

    @Test
    void aProducerFrozenPastItsLeaseThenThawed_noPullGetsAnotherPromptsKv() throws Exception {
        startPair("stop");
        int[] tokens = prompt(SEED.getAndIncrement(), 40);
        JsonNode params = p.prefill("frozen", tokens);
        p.signal("STOP");
        try {
            Thread.sleep(LEASE.plusMillis(500).toMillis()); // past the lease, but P's loop cannot reap it
            // D reads P's memory through CMA while P is frozen; the slot still holds the nonce, so the KV is
            // still P's to give; or D's registry dropped the silent P (peer_gone, unknown_peer), or its
            // timeout declined the pull: never wrong KV
            String outcome = judge(d.pull("frozen", tokens, params));
            assertTrue(List.of("received", "declined:lease_mismatch", "declined:timeout", "declined:peer_gone",
                    "declined:unknown_peer").contains(outcome), outcome);
        } finally {
            p.signal("CONT");
        }
        // after the thaw P reaps or releases the lease, and serves as before
        p.awaitStatus("the frozen lease ended", s -> s.path("producer").path("leases_live").asInt() == 0,
                LEASE.plusSeconds(10));
        d.awaitProducers(READY, "faults-p-stop");
        int[] next = prompt(SEED.getAndIncrement(), 40);
        assertEquals("received", judge(d.pull("after-thaw", next, p.prefill("after-thaw", next))));
        assertEquals(204, d.delete("/v1/consumer/requests/after-thaw").status());
        d.delete("/v1/consumer/requests/frozen");
    }

    @Test
    void aProducerKilledDuringTheDecodersReads_everyAnswerIsRightOrDeclined_andDecoderFreesEverything()
            throws Exception {
        startPair("pkill");
        ExecutorService clients = Executors.newFixedThreadPool(4);
        Map<String, Integer> outcomes = new ConcurrentHashMap<>();
        AtomicInteger ids = new AtomicInteger();
        try {
            List<Future<?>> running = new java.util.ArrayList<>();
            for (int c = 0; c < 4; c++) {
                running.add(clients.submit(() -> {
                    for (int i = 0; i < 200; i++) {
                        String id = "k-" + ids.incrementAndGet();
                        int[] tokens = prompt(SEED.getAndIncrement(), 512); // 32 blocks: READs that take a while
                        Reply prefilled;
                        try {
                            prefilled = p.tryPrefill(id, tokens);
                        } catch (java.io.IOException producerGone) {
                            return null; // killed: its port refuses connections
                        }
                        if (prefilled.status() == 503) {
                            // P's 64 blocks hold two of these prompts: a capacity refusal, retried as it says
                            assertEquals("no-free-blocks", prefilled.json().path("reason").asText(), prefilled.toString());
                            outcomes.merge("prefill-refused:no-free-blocks", 1, Integer::sum);
                            Thread.sleep(Duration.ofSeconds(Long.parseLong(prefilled.header("Retry-After"))));
                            continue;
                        }
                        assertEquals(200, prefilled.status(), "P prefills " + id + ": " + prefilled);
                        JsonNode params = prefilled.json().path("kv_transfer_params");
                        Reply r = d.pull(id, tokens, params);
                        outcomes.merge(judge(r), 1, Integer::sum);
                        d.delete("/v1/consumer/requests/" + id);
                    }
                    return null;
                }));
            }
            // P is killed during D's reads: once a pull has been served, with the four clients pulling on
            long served = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (outcomes.getOrDefault("received", 0) == 0 && running.stream().noneMatch(Future::isDone)) {
                assertTrue(System.nanoTime() < served, "no pull received within 60 s of the clients' start, before P"
                        + " was to be killed mid-READs: " + outcomes + "\nP:\n" + p.tail() + "\nD:\n" + d.tail());
                Thread.sleep(20);
            }
            p.kill();
            for (Future<?> f : running) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            clients.shutdownNow();
        }
        System.out.println("ProcessFaultsIT producer killed mid-READs: " + outcomes);
        assertTrue(outcomes.getOrDefault("received", 0) > 0, "pulls were served before the kill: " + outcomes);
        JsonNode status = d.awaitStatus("D holds nothing", s -> s.path("consumer").path("blocks_in_use").asInt() == 0
                && s.path("consumer").path("pulls_live").asInt() == 0, Duration.ofSeconds(30));
        assertEquals(200, d.get("/q/health/live").status(), "D's loop survived: " + status);
    }

    @Test
    void producerAndDecoderRestartedUnderLoad_everyAnswerIsRightOrRefused_andServiceResumes() throws Exception {
        startPair("restart");
        ExecutorService clients = Executors.newFixedThreadPool(2);
        Map<String, Integer> outcomes = new ConcurrentHashMap<>();
        AtomicInteger ids = new AtomicInteger();
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        try {
            List<Future<?>> running = new java.util.ArrayList<>();
            for (int c = 0; c < 2; c++) {
                running.add(clients.submit(() -> {
                    for (int i = 0; i < 2_000 && !stop.get(); i++) {
                        String id = "r-" + ids.incrementAndGet();
                        int[] tokens = prompt(SEED.getAndIncrement(), 128);
                        Reply r;
                        try {
                            Reply prefilled = p.post("/v1/producer/prefill", Map.of("request_id", id, "token_ids",
                                    tokens, "kv_transfer_params", Map.of("do_remote_decode", true)));
                            if (prefilled.status() != 200) {
                                outcomes.merge("prefill:" + prefilled.status(), 1, Integer::sum);
                                Thread.sleep(50); // P is starting (503): keep the bounded loop spread over the restarts
                                continue;
                            }
                            r = d.pull(id, tokens, prefilled.json().path("kv_transfer_params"));
                        } catch (java.io.IOException down) {
                            // P or D is restarting: its port refuses connections for a while
                            outcomes.merge("unreachable", 1, Integer::sum);
                            Thread.sleep(50);
                            continue;
                        }
                        // a wrong answer fails the test: judge is outside the restart tolerance
                        outcomes.merge(r.status() == 200 || r.status() == 409 ? judge(r) : "http:" + r.status(),
                                1, Integer::sum);
                        try {
                            d.delete("/v1/consumer/requests/" + id);
                        } catch (java.io.IOException down) {
                            outcomes.merge("release-unreachable", 1, Integer::sum);
                        }
                    }
                    return null;
                }));
            }
            Thread.sleep(1000);
            int pPort = p.port;
            p.close(); // SIGTERM: P withdraws and closes its agents; its leases die with it
            p = ServiceProcess.start("p-restart-2", pm, LOGS, pPort);
            p.awaitReady(READY);
            Thread.sleep(1000);
            int dPort = d.port;
            d.close();
            d = ServiceProcess.start("d-restart-2", dm, LOGS, dPort);
            d.awaitReady(READY);
            d.awaitProducers(READY, "faults-p-restart");
            Thread.sleep(1000);
            stop.set(true);
            for (Future<?> f : running) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            stop.set(true);
            clients.shutdownNow();
        }
        System.out.println("ProcessFaultsIT P and D restarted under load: " + outcomes);
        // A prefill whose pull found D restarting holds its lease until expiry; 2 clients make 8 of those
        // (all 64 blocks) in well under the 2 s lease. Once those have expired, P must have every block back.
        p.awaitStatus("P's leases of unreachable pulls expired",
                s -> s.path("producer").path("blocks_in_use").asInt() == 0, LEASE.plusSeconds(10));
        int[] tokens = prompt(SEED.getAndIncrement(), 40);
        assertEquals("received", judge(d.pull("after-restarts", tokens, p.prefill("after-restarts", tokens))));
        assertEquals(204, d.delete("/v1/consumer/requests/after-restarts").status());
        JsonNode status = d.awaitStatus("D holds nothing", s -> s.path("consumer").path("blocks_in_use").asInt() == 0,
                Duration.ofSeconds(30));
        assertEquals(0, status.path("consumer").path("pulls_live").asInt(), status.toString());
    }
}
