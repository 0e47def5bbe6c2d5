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
import java.util.concurrent.atomic.AtomicBoolean;
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
    /**
     * The reaper sweeps every lease in every step of P's loop, and an idle loop parks at most
     * pd.loop.max-idle-park (1 ms) between steps; this allows for that step on two busy cores, the status poll
     * and a healed link delivering what TCP still retransmits.
     */
    private static final Duration REAPER_PERIOD = Duration.ofSeconds(1);
    /** How long D's READs a fault left in flight may take to end once the link is healthy (NIXL reports them terminal). */
    private static final Duration READS_SETTLE = Duration.ofSeconds(15);
    private static final int POOL = 128;
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
            Map<String, String> pm = PairSettings.producer("nf-p", "nf", POOL, 16, LEASE);
            pm.put("pd.advertised-host", NamespacePair.P_ADDRESS);
            pm.put("quarkus.http.host", "0.0.0.0");
            p = ServiceProcess.start("p", pm, LOGS, new Launch(net.p, NamespacePair.P_CONTROL, UCX_OVER_THE_LINK));
            Map<String, String> dm = PairSettings.consumer("nf-d", NamespacePair.P_ADDRESS + ":" + p.port, POOL, LEASE);
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

    /**
     * One prefill on P and its pull on D; a pull answers with its prompt's KV (then released) or is declined.
     * Under a fault ({@code underFault}) P may also refuse the prefill for capacity (503 no-free-blocks, with
     * Retry-After), while leases whose read notifications have not reached it hold its pool: counted, not retried.
     */
    private String roundTrip(String id, int tokens, boolean underFault) throws Exception {
        int[] prompt = prompt(SEED.getAndIncrement(), tokens);
        Reply prefill = p.tryPrefill(id, prompt);
        if (underFault && prefill.status() == 503) {
            assertEquals("no-free-blocks", prefill.json().path("reason").asText(), prefill.toString());
            assertEquals("1", prefill.header("Retry-After"), "a 503 for capacity says when to retry: " + prefill);
            return count("refused:no-free-blocks");
        }
        assertEquals(200, prefill.status(), "P prefills " + id + ": " + prefill);
        Reply r = d.pull(id, prompt, prefill.json().path("kv_transfer_params"));
        String outcome;
        if (r.status() == 409) {
            outcome = "declined:" + r.json().path("reason").asText();
        } else {
            assertEquals(200, r.status(), "a pull is received or declined: " + r);
            assertTrue(r.json().path("matches_reference").asBoolean(), "KV that is not the prompt's: " + r.json());
            assertEquals(204, d.delete("/v1/consumer/requests/" + id).status());
            outcome = r.json().path("state").asText();
        }
        return count(outcome);
    }

    private String count(String outcome) {
        synchronized (outcomes) {
            outcomes.merge(outcome, 1, Integer::sum);
        }
        return outcome;
    }

    /**
     * After a fault: P and D serve again once what the fault left has ended, and the next round trip is
     * received. P's leases end by D's read notification (the link is back) or expire: a lease outlives the last
     * heartbeat P applied by at most the lease itself (a heartbeat extends it by two thirds of one), and the
     * reaper, which sweeps every lease in every step of P's loop, frees it within {@link #REAPER_PERIOD}. D's
     * blocks come back once NIXL reports terminal every READ the fault left in flight (quarantine, L13).
     * Returns how long P took to hold nothing again.
     */
    private Duration awaitServing(String phase) throws Exception {
        long t0 = System.nanoTime();
        p.awaitStatus("P serving again after " + phase + ": every lease the " + phase + " phase left ended (read"
                + " notification or expiry) within the lease (" + LEASE + ") plus the reaper's period ("
                + REAPER_PERIOD + ")", NetworkFaultsIT::producerHoldsNothing, LEASE.plus(REAPER_PERIOD));
        Duration freed = Duration.ofNanos(System.nanoTime() - t0);
        d.awaitStatus("D serving again after " + phase + ": every READ the " + phase + " phase left in flight"
                + " terminal and its blocks free", NetworkFaultsIT::consumerHoldsNothing, READS_SETTLE);
        String outcome = roundTrip(phase + "-again", 40, false);
        assertEquals("received", outcome, "the first round trip after " + phase + ", with P and D holding nothing"
                + " and the link healthy; outcomes " + outcomes + "\nP:\n" + p.tail() + "\nD:\n" + d.tail());
        System.out.println("NetworkFaultsIT after " + phase + ": P held nothing again " + freed.toMillis()
                + " ms after the phase ended");
        return freed;
    }

    private static boolean producerHoldsNothing(JsonNode s) {
        return s.path("producer").path("leases_live").asInt() == 0
                && s.path("producer").path("blocks_in_use").asInt() == 0
                && s.path("producer").path("slots_in_use").asInt() == 0;
    }

    private static boolean consumerHoldsNothing(JsonNode s) {
        return s.path("consumer").path("pulls_live").asInt() == 0
                && s.path("consumer").path("blocks_in_use").asInt() == 0;
    }

    /** After a round trip that was received and released: P's lease ended by D's notification, D's blocks freed. */
    private void assertNothingHeld() throws Exception {
        p.awaitStatus("P holds nothing (the last lease released by D's read notification, else expired)",
                NetworkFaultsIT::producerHoldsNothing, LEASE.plus(REAPER_PERIOD));
        d.awaitStatus("D holds nothing", NetworkFaultsIT::consumerHoldsNothing, READS_SETTLE);
    }

    /** Polls {@code metric} at {@code service} until it exceeds {@code above}; fails saying what it waited for. */
    private static void awaitMetricAbove(ServiceProcess service, String metric, double above, String what,
            Duration deadline) throws Exception {
        long end = System.nanoTime() + deadline.toNanos();
        double last = service.metric(metric);
        while (last <= above) {
            if (System.nanoTime() > end) {
                throw new AssertionError(service.name + ": " + what + " not seen within " + deadline + " (" + metric
                        + " still " + last + ")\n" + service.tail());
            }
            Thread.sleep(50);
            last = service.metric(metric);
        }
    }

    /**
     * P's whole pool held by leases nobody reads: a prefill is answered 503 no-free-blocks with Retry-After (a
     * router retries it later, or on another P), and P serves again within the lease plus the reaper's period,
     * the leases expiring unread. What CI met after the lossy phase, when P's pool was still held by leases whose
     * read notifications had not reached it, made certain here.
     */
    @Test
    void pFullOfLeasesNobodyReads_answers503WithRetryAfter_servesAgainWithinTheLeasePlusTheReapersPeriod()
            throws Exception {
        int prompt = 256; // 16 blocks
        int held = 0;
        for (int i = 0; held + 16 <= POOL; i++, held += 16) {
            p.prefill("unread-" + i, prompt(SEED.getAndIncrement(), prompt));
        }
        Reply full = p.tryPrefill("one-more", prompt(SEED.getAndIncrement(), 40));
        assertEquals(503, full.status(), "P's pool is held by leases: " + full);
        assertEquals("no-free-blocks", full.json().path("reason").asText(), full.toString());
        assertEquals("1", full.header("Retry-After"), "a 503 for capacity says when to retry: " + full);
        awaitServing("unread");
    }

    @Test
    void theLinkCutMidTransferThenRestoredThenDegraded_everyPullIsItsKvOrDeclined_bothServeAgain()
            throws Exception {
        long before = net.bytesIntoD();
        for (int i = 0; i < 3; i++) {
            assertEquals("received", roundTrip("warm-" + i, 40, false), "KV crosses the link between the namespaces");
        }
        long kv = 3L * 3 * 196_608; // 3 pulls of 3 blocks (24 layers, 2 heads, 16 tokens, 64 dims, 2 bytes)
        long crossed = net.bytesIntoD() - before;
        assertTrue(crossed >= kv, "the KV came over the veth link (UCX over TCP), not shared memory: " + crossed
                + " bytes crossed, " + kv + " pulled");

        ExecutorService client = Executors.newSingleThreadExecutor();
        AtomicBoolean restored = new AtomicBoolean();
        try {
            // round trips until two after the link is back (at most 200): one is under way when the link is cut
            Future<?> during = client.submit(() -> {
                int after = 0;
                for (int i = 0; i < 200 && after < 2; i++) { // 256 tokens: 16 blocks, 3 MiB a pull
                    boolean back = restored.get();
                    roundTrip("cut-" + i, 256, true);
                    after += back ? 1 : 0;
                }
                return null;
            });
            Thread.sleep(300);
            double expiredBefore = p.metric("nixl_num_kv_expired_reqs_total");
            net.cut();
            try {
                // the round trip under way (or the next one) holds a lease D cannot heartbeat: P reaps it
                awaitMetricAbove(p, "nixl_num_kv_expired_reqs_total", expiredBefore, "P reaped a lease D could not"
                        + " heartbeat over the cut link (its export, then the lease, then the reaper's period)",
                        LEASE.multipliedBy(2).plus(REAPER_PERIOD));
            } finally {
                net.restore();
                restored.set(true);
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
                roundTrip("lossy-" + i, 256, true);
            }
        } finally {
            net.heal();
        }
        awaitServing("lossy");
        System.out.println("NetworkFaultsIT " + degraded + ", outcomes in all: " + outcomes);
        assertNothingHeld();
    }
}
