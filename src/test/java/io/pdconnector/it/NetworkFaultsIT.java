package io.pdconnector.it;

import static io.pdconnector.it.ServiceProcess.READY;
import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.pdconnector.it.ServiceProcess.Launch;
import io.pdconnector.it.ServiceProcess.Reply;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * P and D as packaged services in two network namespaces the test makes ({@link NamespacePair}), as two
 * hosts: UCX moves the KV over TCP on the one veth link between them (UCX_TLS=tcp, UCX_NET_DEVICES=
 * that link), not through shared memory. The link is cut mid-transfer and restored, then degraded
 * (delay and loss). Every pull is received with its prompt's KV or declined; P and D serve again once
 * the link is back; nothing is held once the leases end. Every loop is bounded in count and time.
 */
class NetworkFaultsIT {

    private static final Duration LEASE = Duration.ofSeconds(2);
    private static final Path LOGS = ServiceProcess.logsOf(NetworkFaultsIT.class);
    private static final AtomicInteger SEED = new AtomicInteger(1300);
    private static final Map<String, String> UCX_OVER_THE_LINK = Map.of("UCX_TLS", "tcp",
            "UCX_NET_DEVICES", NamespacePair.LINK);

    private static NamespacePair net;
    private static ServiceProcess p;
    private static ServiceProcess d;
    private final Map<String, Integer> outcomes = new TreeMap<>();

    @BeforeAll
    static void start() throws Exception {
        net = NamespacePair.create(Long.toString(ProcessHandle.current().pid() % 10000));
        try {
            Map<String, String> pm = PairSettings.producer("nf-p", "nf", 128, 16, LEASE);
            pm.put("pd.advertised-host", NamespacePair.P_ADDRESS);
            pm.put("quarkus.http.host", "0.0.0.0");
            p = ServiceProcess.start("p", pm, LOGS, new Launch(net.p, NamespacePair.P_CONTROL, UCX_OVER_THE_LINK));
            Map<String, String> dm = PairSettings.consumer("nf-d", NamespacePair.P_ADDRESS + ":" + p.port, 128, LEASE);
            dm.put("pd.consumer.heartbeat-interval", "250ms");
            dm.put("pd.consumer.pull-timeout", "5s");
            dm.put("pd.registry.static.refresh-interval", "500ms");
            dm.put("pd.advertised-host", NamespacePair.D_ADDRESS);
            dm.put("quarkus.http.host", "0.0.0.0");
            d = ServiceProcess.start("d", dm, LOGS, new Launch(net.d, NamespacePair.D_CONTROL, UCX_OVER_THE_LINK));
            p.awaitReady(READY);
            d.awaitReady(READY);
            d.awaitProducers(READY, "nf-p");
        } catch (Exception | AssertionError e) {
            stop();
            throw e;
        }
    }

    @AfterAll
    static void stop() {
        for (ServiceProcess s : new ServiceProcess[] {p, d}) {
            if (s != null) {
                s.close();
            }
        }
        if (net != null) {
            net.close();
        }
    }

    /** One prefill on P and its pull on D; a pull answers with its prompt's KV (then released) or is declined. */
    private String roundTrip(String id, int tokens) throws Exception {
        int[] prompt = prompt(SEED.getAndIncrement(), tokens);
        JsonNode params = p.prefill(id, prompt);
        Reply r = d.pull(id, prompt, params);
        String outcome;
        if (r.status() == 409) {
            outcome = "declined:" + r.json().path("reason").asText();
        } else {
            assertEquals(200, r.status(), "a pull is received or declined: " + r);
            assertTrue(r.json().path("matches_reference").asBoolean(), "KV that is not the prompt's: " + r.json());
            assertEquals(204, d.delete("/v1/consumer/requests/" + id).status());
            outcome = r.json().path("state").asText();
        }
        synchronized (outcomes) {
            outcomes.merge(outcome, 1, Integer::sum);
        }
        return outcome;
    }

    /** After a fault: a bounded number of tries until a pull is received again. */
    private void awaitServing(String phase) throws Exception {
        long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        String last = "none";
        for (int i = 0; i < 40 && System.nanoTime() < end; i++) {
            last = roundTrip(phase + "-again-" + i, 40);
            if (last.equals("received")) {
                return;
            }
            Thread.sleep(500);
        }
        throw new AssertionError("no pull received after " + phase + " (last " + last + "); outcomes " + outcomes
                + "\nP:\n" + p.tail() + "\nD:\n" + d.tail());
    }

    private void assertNothingHeld() throws Exception {
        p.awaitStatus("P holds nothing", s -> s.path("producer").path("leases_live").asInt() == 0
                && s.path("producer").path("blocks_in_use").asInt() == 0
                && s.path("producer").path("slots_in_use").asInt() == 0, LEASE.plusSeconds(15));
        d.awaitStatus("D holds nothing", s -> s.path("consumer").path("pulls_live").asInt() == 0
                && s.path("consumer").path("blocks_in_use").asInt() == 0, Duration.ofSeconds(15));
    }

    @Test
    void theLinkCutMidTransferThenRestoredThenDegraded_everyPullIsItsKvOrDeclined_bothServeAgain()
            throws Exception {
        long before = net.bytesIntoD();
        for (int i = 0; i < 3; i++) {
            assertEquals("received", roundTrip("warm-" + i, 40), "KV crosses the link between the namespaces");
        }
        long kv = 3L * 3 * 196_608; // 3 pulls of 3 blocks (24 layers, 2 heads, 16 tokens, 64 dims, 2 bytes)
        long crossed = net.bytesIntoD() - before;
        assertTrue(crossed >= kv, "the KV came over the veth link (UCX over TCP), not shared memory: " + crossed
                + " bytes crossed, " + kv + " pulled");

        ExecutorService client = Executors.newSingleThreadExecutor();
        try {
            Future<?> during = client.submit(() -> {
                for (int i = 0; i < 12; i++) { // 256 tokens: 16 blocks, 3 MiB a pull
                    roundTrip("cut-" + i, 256);
                }
                return null;
            });
            Thread.sleep(300);
            net.cut();
            try {
                Thread.sleep(LEASE.multipliedBy(2).toMillis()); // past the lease: P reaps what D cannot heartbeat
            } finally {
                net.restore();
            }
            during.get(120, TimeUnit.SECONDS);
        } finally {
            client.shutdownNow();
            assertTrue(client.awaitTermination(30, TimeUnit.SECONDS));
        }
        awaitServing("cut");
        System.out.println("NetworkFaultsIT link cut and restored, outcomes: " + outcomes);
        assertNothingHeld();

        String degraded = net.degrade(50, 5, "20mbit");
        try {
            for (int i = 0; i < 8; i++) {
                roundTrip("lossy-" + i, 256);
            }
        } finally {
            net.heal();
        }
        awaitServing("lossy");
        System.out.println("NetworkFaultsIT " + degraded + ", outcomes in all: " + outcomes);
        assertNothingHeld();
    }
}
