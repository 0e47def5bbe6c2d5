package io.pdconnector.it;

import static io.pdconnector.it.ServiceProcess.READY;
import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.pdconnector.it.ServiceProcess.Reply;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Soak: 64 clients against one packaged producer and one packaged decoder (real NIXL, loopback) for
 * {@code pd.soak.seconds} (60; {@code -Pnightly} 600), each looping prefill, pull, release; one round
 * trip in 20 has its lease aborted on P while the pull's READs run (a lapse), and D's block READs are
 * delayed at random ({@code pd.faults.*}). What must hold: zero pulls answered with KV that is not their
 * prompt's, zero blocks, slots or pulls held once the leases end, both processes' resident memory
 * bounded (sampled; the last sample within 1.5x of the one a quarter into the run) and heap under
 * -Xmx. p50/p99 of the round trip and the counts are printed.
 */
class SoakIT {

    /** Long enough that a queued pull on a loaded machine seldom lapses by itself: lapses are the injected ones. */
    private static final Duration LEASE = Duration.ofSeconds(5);
    private static final int CLIENTS = 64;
    private static final int LAPSE_ONE_IN = 20;
    private static final Duration RUN = Duration.ofSeconds(Long.getLong("pd.soak.seconds", 60));
    private static final Path LOGS = ServiceProcess.logsOf(SoakIT.class);

    private ServiceProcess p;
    private ServiceProcess d;
    private final Map<String, AtomicInteger> outcomes = new ConcurrentHashMap<>();
    private final List<Long> micros = java.util.Collections.synchronizedList(new ArrayList<>());
    private final AtomicLong foreign = new AtomicLong();
    private final ExecutorService lapses = Executors.newVirtualThreadPerTaskExecutor();

    @AfterEach
    void stop() {
        lapses.shutdownNow();
        for (ServiceProcess s : new ServiceProcess[] {p, d}) {
            if (s != null) {
                s.close();
            }
        }
    }

    private void startPair() throws Exception {
        p = ServiceProcess.start("p", PairSettings.producer("soak-p", "soak", 512, 128, LEASE), LOGS);
        Map<String, String> dm = PairSettings.consumer("soak-d", "127.0.0.1:" + p.port, 512, LEASE);
        dm.put("pd.consumer.heartbeat-interval", "250ms");
        dm.put("pd.consumer.pull-timeout", "10s");
        PairSettings.delayBlockReads(dm, Duration.ofMillis(20), 0.05);
        d = ServiceProcess.start("d", dm, LOGS);
        p.awaitReady(READY);
        d.awaitReady(READY);
        d.awaitProducers(READY, "soak-p");
    }

    private void count(String outcome) {
        outcomes.computeIfAbsent(outcome, k -> new AtomicInteger()).incrementAndGet();
    }

    /** One client's loop until {@code endNanos}, at most {@code maxTrips} round trips. */
    private Void client(int c, long endNanos, int maxTrips) throws Exception {
        for (int i = 0; i < maxTrips && System.nanoTime() < endNanos; i++) {
            String id = "c" + c + "-" + i;
            int[] tokens = prompt(c * 1_000_003 + i, 16 + ThreadLocalRandom.current().nextInt(48));
            long start = System.nanoTime();
            Reply prefill = p.post("/v1/producer/prefill", Map.of("request_id", id, "token_ids", tokens,
                    "kv_transfer_params", Map.of("do_remote_decode", true)));
            if (prefill.status() != 200) {
                assertEquals(503, prefill.status(), prefill.toString());
                count("prefill-refused:" + prefill.json().path("reason").asText());
                Thread.sleep(50);
                continue;
            }
            JsonNode params = prefill.json().path("kv_transfer_params");
            Future<?> lapse = null;
            if (ThreadLocalRandom.current().nextInt(LAPSE_ONE_IN) == 0) {
                lapse = lapses.submit(() -> p.delete("/v1/producer/requests/" + id));
            }
            Reply pull = d.pull(id, tokens, params);
            if (lapse != null) {
                lapse.get(30, TimeUnit.SECONDS);
                count("lapses-injected");
            }
            if (pull.status() == 200) {
                if (!pull.json().path("matches_reference").asBoolean()) {
                    foreign.incrementAndGet();
                }
                assertEquals(204, d.delete("/v1/consumer/requests/" + id).status());
                count("received");
            } else {
                assertTrue(pull.status() == 409 || pull.status() == 503, pull.toString());
                count((pull.status() == 409 ? "declined:" : "refused:") + pull.json().path("reason").asText());
            }
            micros.add((System.nanoTime() - start) / 1000);
        }
        return null;
    }

    @Test
    void sixtyFourClientsWithLapses_noForeignBytes_noLeaks_memoryBounded() throws Exception {
        startPair();
        long[] firstRss = null;
        List<String> samples = new ArrayList<>();
        long maxHeap = 0;
        long end = System.nanoTime() + RUN.toNanos();
        ExecutorService pool = Executors.newFixedThreadPool(CLIENTS);
        List<Future<Void>> clients = new ArrayList<>();
        try {
            for (int c = 0; c < CLIENTS; c++) {
                int client = c;
                clients.add(pool.submit(() -> client(client, end, 100_000)));
            }
            long quarter = System.nanoTime() + RUN.toNanos() / 4;
            long[] rss = {0, 0};
            while (System.nanoTime() < end) {
                Thread.sleep(Math.min(5_000, Math.max(1, RUN.toMillis() / 12)));
                rss = new long[] {p.residentBytes(), d.residentBytes()};
                long heap = (long) Math.max(p.metric("jvm_memory_used_bytes", "area", "heap"),
                        d.metric("jvm_memory_used_bytes", "area", "heap"));
                maxHeap = Math.max(maxHeap, heap);
                samples.add(String.format("P %d MiB D %d MiB heap %d MiB", rss[0] >> 20, rss[1] >> 20, heap >> 20));
                if (firstRss == null && System.nanoTime() >= quarter) {
                    firstRss = rss;
                }
            }
            for (Future<Void> f : clients) {
                f.get(60, TimeUnit.SECONDS);
            }
            long[] last = {p.residentBytes(), d.residentBytes()};
            assertTrue(firstRss != null, "sampled a quarter into the run");
            for (int s = 0; s < 2; s++) {
                assertTrue(last[s] <= firstRss[s] * 3 / 2, (s == 0 ? "P" : "D") + " resident memory grew from "
                        + (firstRss[s] >> 20) + " to " + (last[s] >> 20) + " MiB: " + samples);
            }
            assertTrue(maxHeap < 256L << 20, "heap under -Xmx256m: " + samples);
        } finally {
            pool.shutdownNow();
            assertTrue(pool.awaitTermination(60, TimeUnit.SECONDS));
        }
        long[] lat = micros.stream().mapToLong(Long::longValue).sorted().toArray();
        Map<String, Integer> counts = new TreeMap<>();
        outcomes.forEach((k, v) -> counts.put(k, v.get()));
        System.out.printf("SoakIT: %d clients, %d s, %d round trips (%.0f/s), p50 %.1f ms, p99 %.1f ms, foreign %d,"
                + " outcomes %s, memory samples %s%n", CLIENTS, RUN.toSeconds(), lat.length,
                lat.length / (double) RUN.toSeconds(), lat[lat.length / 2] / 1e3, lat[(int) (lat.length * 0.99)] / 1e3,
                foreign.get(), counts, samples);
        assertEquals(0, foreign.get(), "pulls answered with KV that is not their prompt's: " + counts);
        assertTrue(counts.getOrDefault("received", 0) > 0, "round trips received: " + counts);
        p.awaitStatus("P holds nothing", s -> s.path("producer").path("leases_live").asInt() == 0
                && s.path("producer").path("blocks_in_use").asInt() == 0
                && s.path("producer").path("slots_in_use").asInt() == 0, LEASE.plusSeconds(20));
        d.awaitStatus("D holds nothing", s -> s.path("consumer").path("pulls_live").asInt() == 0
                && s.path("consumer").path("blocks_in_use").asInt() == 0
                && s.path("consumer").path("queue_depth").asInt() == 0, Duration.ofSeconds(20));
        assertEquals(counts.getOrDefault("received", 0), (int) d.metric("pd_pulls_total", "outcome", "received"));
        assertTrue(Arrays.stream(lat).allMatch(x -> x >= 0));
    }
}
