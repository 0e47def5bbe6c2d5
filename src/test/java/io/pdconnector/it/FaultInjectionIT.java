package io.pdconnector.it;

import static io.pdconnector.it.ServiceProcess.READY;
import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.pdconnector.it.ServiceProcess.Reply;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Faults injected into a packaged decoder's own READs ({@code pd.faults.*}) with a packaged producer,
 * real NIXL, on loopback: the step loop stalled by a held READ post (liveness red, then live again), the
 * command queue full meanwhile (503 queue-full with Retry-After), and READs failed or delayed at random.
 * After each: no pull answered with KV that is not its prompt's, nothing held once the leases expire,
 * and the metrics say what the answers said.
 */
class FaultInjectionIT {

    private static final Duration LEASE = Duration.ofSeconds(2);
    private static final Path LOGS = ServiceProcess.logsOf(FaultInjectionIT.class);
    private static final AtomicInteger SEED = new AtomicInteger(900);
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    private ServiceProcess p;
    private ServiceProcess d;

    private void startPair(String name, Map<String, String> decoderSettings) throws Exception {
        p = ServiceProcess.start("p-" + name, PairSettings.producer("fi-p-" + name, "fi-" + name, 64, 16, LEASE),
                LOGS);
        Map<String, String> dm = PairSettings.consumer("fi-d-" + name, "127.0.0.1:" + p.port, 128, LEASE);
        dm.put("pd.consumer.heartbeat-interval", "250ms");
        dm.put("pd.consumer.pull-timeout", "5s");
        dm.put("pd.registry.static.refresh-interval", "500ms");
        dm.put("pd.faults.enabled", "true");
        dm.putAll(decoderSettings);
        d = ServiceProcess.start("d-" + name, dm, LOGS);
        p.awaitReady(READY);
        d.awaitReady(READY);
        d.awaitProducers(READY, "fi-p-" + name);
    }

    @AfterEach
    void stop() {
        for (ServiceProcess s : new ServiceProcess[] {p, d}) {
            if (s != null) {
                s.close();
            }
        }
    }

    /** A pull's answer is its prompt's KV, or no KV; a received pull is released at once. */
    private String pullAndJudge(String id, int[] tokens, JsonNode params) throws Exception {
        Reply r = d.pull(id, tokens, params);
        if (r.status() == 409) {
            return "declined:" + r.json().path("reason").asText();
        }
        assertEquals(200, r.status(), r.toString());
        assertTrue(r.json().path("matches_reference").asBoolean(), "KV that is not the prompt's: " + r.json());
        assertEquals(204, d.delete("/v1/consumer/requests/" + id).status());
        return r.json().path("state").asText();
    }

    private int liveness() throws Exception {
        return HTTP.send(HttpRequest.newBuilder(d.uri("/q/health/live")).timeout(Duration.ofSeconds(5)).build(),
                HttpResponse.BodyHandlers.discarding()).statusCode();
    }

    private int awaitLiveness(int wanted, Duration deadline) throws Exception {
        long end = System.nanoTime() + deadline.toNanos();
        int last = liveness();
        while (last != wanted && System.nanoTime() < end) {
            Thread.sleep(100);
            last = liveness();
        }
        return last;
    }

    /** Once every lease is over: P holds no block, slot or lease; D holds no pull or block; metrics agree. */
    private void assertNothingHeldAndMetricsAgree(Map<String, Integer> outcomes) throws Exception {
        p.awaitStatus("P holds nothing", s -> s.path("producer").path("leases_live").asInt() == 0
                && s.path("producer").path("blocks_in_use").asInt() == 0
                && s.path("producer").path("slots_in_use").asInt() == 0, LEASE.plusSeconds(10));
        JsonNode ds = d.awaitStatus("D holds nothing", s -> s.path("consumer").path("pulls_live").asInt() == 0
                && s.path("consumer").path("blocks_in_use").asInt() == 0, Duration.ofSeconds(10));
        int received = outcomes.getOrDefault("received", 0);
        int declined = outcomes.entrySet().stream().filter(e -> e.getKey().startsWith("declined:"))
                .mapToInt(Map.Entry::getValue).sum();
        assertEquals(received, (int) d.metric("pd_pulls_total", "outcome", "received"), "received: " + outcomes);
        assertEquals(declined, (int) d.metric("pd_pulls_total", "outcome", "declined"), "declined: " + outcomes);
        assertEquals(ds.path("consumer").path("commands_refused").asLong(),
                (long) d.metric("pd_commands_refused_total", "side", "consumer"));
        assertEquals(0, (int) d.metric("pd_requests_live", "side", "consumer"));
        assertEquals(0, (int) p.metric("pd_requests_live", "side", "producer"));
    }

    @Test
    void aStalledStepLoop_livenessGoesRedAndRecovers_aFullQueueAnswers503WithRetryAfter() throws Exception {
        Map<String, String> faults = new LinkedHashMap<>();
        faults.put("pd.faults.read-kind", "slot");
        faults.put("pd.faults.action", "hold");
        faults.put("pd.faults.duration", "5s"); // long enough to see it red and flood it on a loaded machine
        faults.put("pd.faults.every-nth", "3");
        faults.put("pd.loop.stall-threshold", "1s");
        faults.put("pd.http.queue-capacity", "4");
        startPair("stall", faults);
        Map<String, Integer> outcomes = new TreeMap<>();
        for (int i = 0; i < 2; i++) { // the first two slot READs pass
            int[] tokens = prompt(SEED.getAndIncrement(), 40);
            outcomes.merge(pullAndJudge("pre-" + i, tokens, p.prefill("pre-" + i, tokens)), 1, Integer::sum);
        }
        assertEquals(200, liveness());

        int[] tokens = prompt(SEED.getAndIncrement(), 40);
        JsonNode params = p.prefill("held", tokens);
        ExecutorService pool = Executors.newFixedThreadPool(17);
        try {
            Future<String> held = pool.submit(() -> pullAndJudge("held", tokens, params)); // its slot READ holds D's loop
            assertEquals(503, awaitLiveness(503, Duration.ofSeconds(4)), "liveness goes red while the loop stalls");
            List<Future<HttpResponse<String>>> flood = new ArrayList<>();
            for (int i = 0; i < 16; i++) { // each asks the stalled loop for a pull's status
                flood.add(pool.submit(() -> HTTP.send(HttpRequest.newBuilder(d.uri("/v1/consumer/requests/none-" + 0))
                        .timeout(Duration.ofSeconds(20)).build(), HttpResponse.BodyHandlers.ofString())));
            }
            int refused = 0;
            for (Future<HttpResponse<String>> f : flood) {
                HttpResponse<String> r = f.get(30, TimeUnit.SECONDS);
                if (r.statusCode() == 503) {
                    refused++;
                    assertEquals("1", r.headers().firstValue("Retry-After").orElse(null), r.body());
                    assertTrue(r.body().contains("queue-full"), r.body());
                } else {
                    assertEquals(404, r.statusCode(), "queued, answered once the loop turned: " + r.body());
                }
            }
            assertTrue(refused >= 16 - 4 - 1, refused + " of 16 refused with a queue of 4");
            String heldOutcome = held.get(30, TimeUnit.SECONDS);
            assertTrue(List.of("received", "declined:lease_mismatch", "declined:timeout").contains(heldOutcome),
                    heldOutcome);
            outcomes.merge(heldOutcome, 1, Integer::sum);
            assertEquals(200, awaitLiveness(200, Duration.ofSeconds(5)), "live again once the loop turns");
            assertEquals(refused, (int) d.metric("pd_commands_refused_total", "side", "consumer"));
        } finally {
            pool.shutdownNow();
            assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));
        }
        int[] after = prompt(SEED.getAndIncrement(), 40);
        assertEquals("received", pullAndJudge("after", after, p.prefill("after", after)), "D serves again");
        outcomes.merge("received", 1, Integer::sum);
        assertNothingHeldAndMetricsAgree(outcomes);
    }

    @Test
    void readsFailedOrDelayedAtRandom_everyPullIsItsPromptsKvOrDeclined() throws Exception {
        Map<String, String> faults = new LinkedHashMap<>();
        faults.put("pd.faults.read-kind", "any");
        faults.put("pd.faults.action", "fail");
        faults.put("pd.faults.probability", "0.25");
        faults.put("pd.faults.seed", "7");
        startPair("fail", faults);
        Map<String, Integer> outcomes = new TreeMap<>();
        for (int i = 0; i < 24; i++) {
            int[] tokens = prompt(SEED.getAndIncrement(), 40);
            String outcome = pullAndJudge("f-" + i, tokens, p.prefill("f-" + i, tokens));
            assertTrue(List.of("received", "declined:transfer_failed", "declined:slot_read_failed")
                    .contains(outcome), outcome);
            outcomes.merge(outcome, 1, Integer::sum);
        }
        System.out.println("FaultInjectionIT failed READs, outcomes: " + outcomes);
        assertTrue(outcomes.getOrDefault("received", 0) > 0 && outcomes.size() > 1,
                "some pulls received, some declined (seed 7): " + outcomes);
        assertEquals(outcomes.getOrDefault("declined:transfer_failed", 0),
                (int) d.metric("pd_pull_declines_total", "reason", "transfer_failed"));
        assertNothingHeldAndMetricsAgree(outcomes);
    }
}
