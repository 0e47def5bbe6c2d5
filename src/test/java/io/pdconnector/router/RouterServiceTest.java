package io.pdconnector.router;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.pdconnector.controlplane.InstanceRecord;
import io.pdconnector.error.ClientGoneException;
import io.pdconnector.error.PeerFailureException;
import io.pdconnector.error.UnavailableException;
import io.pdconnector.router.FakeInstance.Reply;
import io.pdconnector.testing.FreePort;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The router's loop against scripted P's and D's on 127.0.0.1: what is retried, how often, where,
 * under which id; that P's lease is aborted whenever D fails or the client goes away; that D's reply
 * (a stream too) reaches the client as D gave it.
 */
class RouterServiceTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String ANSWER = "{\"id\":\"cmpl-r1\",\"choices\":[{\"text\":\" granite\"}]}";
    private final List<FakeInstance> fakes = new ArrayList<>();
    private final List<InstanceRecord> fleet = new ArrayList<>();
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();

    @AfterEach
    void stop() {
        fakes.forEach(FakeInstance::close);
    }

    private FakeInstance producer(String name) throws Exception {
        FakeInstance p = new FakeInstance(name, Reply.json(200, "{\"choices\":[{\"text\":\" g\"}],"
                + "\"kv_transfer_params\":{\"do_remote_prefill\":true,\"remote_engine_id\":\"" + name
                + "\",\"remote_lease_nonce\":7,\"extra_field\":[1,2]}}"));
        fakes.add(p);
        fleet.add(Fleets.producer(name, p.port()));
        return p;
    }

    private FakeInstance decoder(String name, Reply fallback) throws Exception {
        FakeInstance d = new FakeInstance(name, fallback);
        fakes.add(d);
        fleet.add(Fleets.decoder(name, d.port()));
        return d;
    }

    private RouterService router(int maxRetries) {
        RouterSettings s = new RouterSettings("round-robin", maxRetries, Duration.ofSeconds(1), Duration.ofSeconds(5),
                Duration.ofSeconds(5), Duration.ofSeconds(1));
        return new RouterService(true, s, () -> fleet, meters, JSON);
    }

    private static ObjectNode client(boolean stream) {
        ObjectNode body = JSON.createObjectNode();
        body.put("model", "m").put("prompt", "a b c").put("max_tokens", 5).put("temperature", 0.3).put("stream", stream);
        return body;
    }

    private static Reply declined(String reason) {
        return Reply.json(409, "{\"status\":409,\"reason\":\"" + reason + "\"}");
    }

    private double counted(String name, String tag, String value) {
        var c = meters.find(name).tag(tag, value).counter();
        return c == null ? 0 : c.count();
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long end = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > end) {
                fail(what + " within 5 s");
            }
            Thread.sleep(10);
        }
    }

    private static JsonNode json(String text) throws Exception {
        return JSON.readTree(text);
    }

    @Test
    void aDeclinedPull_abortsThatLease_thenPrefillsOnTheOtherP_underAFreshId_andAnswersDsReply() throws Exception {
        FakeInstance p1 = producer("p1");
        FakeInstance p2 = producer("p2");
        FakeInstance d = decoder("d1", Reply.json(200, ANSWER));
        d.script.add(declined("lease_mismatch"));

        Routed r = router(2).route("/v1/completions", client(false), "r1", new ClientSignal());

        assertEquals(200, r.status());
        assertEquals(ANSWER, new String(r.body(), StandardCharsets.UTF_8));
        assertEquals(List.of("lease_mismatch"), r.retries());
        assertEquals("p2", r.pick().producer().engineId());
        assertTrue(r.serverTiming().contains("retries;dur=") && r.serverTiming().contains("desc=\"1\""),
                r.serverTiming());
        await("p1's lease of r1 aborted", () -> p1.deletes().size() == 1);
        assertEquals("/v1/producer/requests/r1", p1.deletes().getFirst().path());
        assertEquals("r1-retry1", p2.posts().getFirst().requestId());
        assertEquals(0, p2.deletes().size(), "the lease D used is released by D, not aborted");

        JsonNode pLeg = json(p1.posts().getFirst().body());
        assertEquals(1, pLeg.path("max_tokens").asInt());
        assertEquals(false, pLeg.path("stream").asBoolean());
        assertTrue(pLeg.path("kv_transfer_params").path("do_remote_decode").asBoolean());
        assertEquals(0.3, pLeg.path("temperature").asDouble(), "fields the router does not read go along");
        JsonNode dLeg = json(d.posts().get(1).body());
        assertEquals(json(p2.seen.getFirst().body()).path("max_tokens").asInt(), 1);
        assertEquals(JSON.readTree("{\"do_remote_prefill\":true,\"remote_engine_id\":\"p2\",\"remote_lease_nonce\":7,"
                + "\"extra_field\":[1,2]}"), dLeg.path("kv_transfer_params"), "P's params verbatim");
        assertEquals(5, dLeg.path("max_tokens").asInt());
        assertEquals("r1-retry1", d.posts().get(1).requestId());
        assertEquals(1, counted("pd_router_retries", "reason", "lease_mismatch"));
        assertEquals(1, counted("pd_router_aborts", "cause", "decode"));
    }

    @Test
    void retriesStopAtMaxRetries_andTheLastDeclineIsTheAnswer_everyLeaseAborted() throws Exception {
        FakeInstance p1 = producer("p1");
        FakeInstance p2 = producer("p2");
        FakeInstance d = decoder("d1", declined("transfer_failed"));

        Routed r = router(2).route("/v1/completions", client(false), "r2", new ClientSignal());

        assertEquals(409, r.status());
        assertEquals("transfer_failed", json(new String(r.body(), StandardCharsets.UTF_8)).path("reason").asText());
        assertEquals(List.of("transfer_failed", "transfer_failed"), r.retries());
        assertEquals(3, d.posts().size(), "one attempt and two retries");
        await("three leases aborted", () -> p1.deletes().size() + p2.deletes().size() == 3);
        assertEquals(2, counted("pd_router_retries", "reason", "transfer_failed"));
        assertEquals(1, counted("pd_router_requests", "outcome", "failed"));
    }

    @Test
    void whatANewPrefillCannotCure_isAnsweredAtOnce() throws Exception {
        FakeInstance p = producer("p1");
        FakeInstance d = decoder("d1", Reply.json(400, "{\"status\":400,\"reason\":\"validation-failed\"}"));
        Routed r = router(2).route("/v1/completions", client(false), "r3", new ClientSignal());
        assertEquals(400, r.status());
        assertEquals(List.of(), r.retries());
        assertEquals(1, d.posts().size());
        await("P's lease aborted after D failed", () -> p.deletes().size() == 1);

        p.script.add(Reply.json(400, "{\"status\":400,\"reason\":\"invalid-argument\"}"));
        Routed refused = router(2).route("/v1/completions", client(false), "r4", new ClientSignal());
        assertEquals(400, refused.status());
        assertEquals(1, d.posts().size(), "no D leg after P refused");
        Thread.sleep(200);
        assertEquals(1, p.deletes().size(), "P refused: it holds nothing to abort");
    }

    @Test
    void aProducerThatDoesNotAnswer_isRetriedOnTheOther() throws Exception {
        int dead = FreePort.pick(); // nothing listens there
        fleet.add(Fleets.producer("pa-dead", dead));
        FakeInstance live = producer("pb-live");
        decoder("d1", Reply.json(200, ANSWER));
        Routed r = router(2).route("/v1/completions", client(false), "r5", new ClientSignal());
        assertEquals(200, r.status());
        assertEquals(List.of("prefill_failed"), r.retries());
        assertEquals("pb-live", r.pick().producer().engineId());
        assertEquals("r5-retry1", live.posts().getFirst().requestId());
    }

    @Test
    void noAnswerOnTheLastAttempt_is502() throws Exception {
        int dead = FreePort.pick(); // nothing listens there
        fleet.add(Fleets.producer("p-dead", dead));
        decoder("d1", Reply.json(200, ANSWER));
        assertThrows(PeerFailureException.class, () -> router(1).route("/v1/completions", client(false), "r6",
                new ClientSignal()));
    }

    @Test
    void aStreamIsRelayedAsItArrives() throws Exception {
        producer("p1");
        List<String> events = List.of("data: {\"a\":1}\n\n", "data: {\"a\":2}\n\n", "data: [DONE]\n\n");
        // D holds its stream after the first event until the router has answered: a router that waited for the
        // end would get the rest only after the fake gives up (10 s), which never writes it.
        CountDownLatch rest = new CountDownLatch(1);
        decoder("d1", new Reply(200, "text/event-stream", events, 0, rest));
        Routed r = router(2).route("/v1/completions", client(true), "r7", new ClientSignal());
        assertTrue(r.streaming());
        rest.countDown();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        r.writeTo(out);
        assertEquals(String.join("", events), out.toString(StandardCharsets.UTF_8));
        assertTrue(r.serverTiming().contains("pull;dur="), r.serverTiming());
    }

    @Test
    void aClientThatGoesAwayWhileDWorks_getsPsLeaseAbortedAtOnce() throws Exception {
        FakeInstance p = producer("p1");
        decoder("d1", new Reply(200, "application/json", List.of("{\"id\":", "\"late\"}"), 10_000));
        ClientSignal signal = new ClientSignal();
        Thread.ofVirtual().start(() -> {
            try {
                Thread.sleep(300);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            signal.clientGone();
        });
        long t0 = System.nanoTime();
        ClientGoneException e = assertThrows(ClientGoneException.class,
                () -> router(2).route("/v1/completions", client(false), "r8", signal));
        assertEquals("client-gone", e.reason());
        assertEquals("r8", e.requestId());
        assertTrue(System.nanoTime() - t0 < Duration.ofSeconds(3).toNanos(), "not held until D's reply");
        await("P's lease aborted", () -> p.deletes().size() == 1);
        assertEquals(1, counted("pd_router_aborts", "cause", "client"));
        assertEquals(0, counted("pd_router_retries", "reason", "decode_failed"), "a client gone is not retried");
    }

    @Test
    void theTwoLegsGoToDifferentInstancesInTurn() throws Exception {
        producer("p1");
        producer("p2");
        decoder("d1", Reply.json(200, ANSWER));
        RouterService router = router(0);
        String first = router.route("/v1/completions", client(false), "t1", new ClientSignal()).pick().producer()
                .engineId();
        String second = router.route("/v1/completions", client(false), "t2", new ClientSignal()).pick().producer()
                .engineId();
        assertNotEquals(first, second);
    }
}
