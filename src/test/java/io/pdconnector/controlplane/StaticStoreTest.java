package io.pdconnector.controlplane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The static store against listeners of this test on loopback: it fetches each configured address's
 * own record, refuses an address answering as someone else, and drops a peer that stops answering.
 */
class StaticStoreTest {

    private static final RecordCodec CODEC = new RecordCodec();
    private final List<HttpServer> servers = new CopyOnWriteArrayList<>();
    private final ConcurrentHashMap<String, InstanceRecord> view = new ConcurrentHashMap<>();
    private final List<String> refused = new CopyOnWriteArrayList<>();
    private StaticStore store;

    private final RegistryListener listener = new RegistryListener() {
        @Override
        public void upsert(InstanceRecord record) {
            view.put(record.engineId(), record);
        }

        @Override
        public void remove(String engineId) {
            view.remove(engineId);
        }

        @Override
        public void replaceAll(Collection<InstanceRecord> records) {
            throw new AssertionError("the static store reports peer by peer");
        }

        @Override
        public void refused(String key, String reason) {
            refused.add(key + ": " + reason);
        }
    };

    @AfterEach
    void stop() {
        if (store != null) {
            store.close();
        }
        servers.forEach(s -> s.stop(0));
    }

    /** A listener on 127.0.0.1 answering {@code /v1/registry/self} with whatever {@code answer} holds. */
    private HttpServer serve(AtomicReference<byte[]> answer) throws IOException {
        return serve(answer, null);
    }

    /** As {@link #serve(AtomicReference)}, but answering 401 to a fetch without {@code Authorization: required}. */
    private HttpServer serve(AtomicReference<byte[]> answer, String required) throws IOException {
        HttpServer s = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        s.createContext("/v1/registry/self", exchange -> {
            String presented = exchange.getRequestHeaders().getFirst("Authorization");
            if (required != null && !required.equals(presented)) {
                exchange.sendResponseHeaders(401, -1);
                exchange.close();
                return;
            }
            byte[] body = answer.get();
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        s.start();
        servers.add(s);
        return s;
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > end) {
                throw new AssertionError(what + " not within 10 s");
            }
            Thread.sleep(20);
        }
    }

    @Test
    void peersAreFetchedFromTheirConfiguredAddressesOnlyAndImpostorsAndGarbageAreRefused() throws Exception {
        AtomicReference<byte[]> a = new AtomicReference<>();
        AtomicReference<byte[]> b = new AtomicReference<>();
        AtomicReference<byte[]> c = new AtomicReference<>("not json".getBytes());
        HttpServer sa = serve(a);
        HttpServer sb = serve(b);
        HttpServer sc = serve(c);
        int pa = sa.getAddress().getPort();
        a.set(CODEC.encode(RegistryTest.record("p", "e1", pa, true)));
        b.set(CODEC.encode(RegistryTest.record("p", "e9", pa, true))); // answers as p at a's address
        store = new StaticStore(List.of("127.0.0.1:" + pa, "127.0.0.1:" + sb.getAddress().getPort(),
                "127.0.0.1:" + sc.getAddress().getPort()), Duration.ofMillis(50), Duration.ofSeconds(1), CODEC,
                new RegistryCounters(), Optional.empty());
        store.start(listener);

        await("p listed", () -> view.containsKey("p"));
        await("the impostor refused", () -> refused.stream().anyMatch(r -> r.contains("answers as p at 127.0.0.1:" + pa)));
        assertEquals("e1", view.get("p").epoch(), "the impostor never replaced p");
        await("garbage refused", () -> refused.stream().anyMatch(r -> r.contains("not a record")));
        assertEquals(1, view.size(), "only p is listed");

        a.set(CODEC.encode(RegistryTest.record("p", "e2", pa, true)));
        await("p's restart seen", () -> view.get("p").epoch().equals("e2"));

        sa.stop(0);
        await("p dropped after " + StaticStore.MISSED_REFRESHES + " missed refreshes", () -> !view.containsKey("p"));
        assertTrue(store.health().reachable(), "the other peers still answer");
    }

    @Test
    void aPeerWithAuthOnIsListedOnlyByAStoreThatPresentsThePeerToken() throws Exception {
        String peerToken = "Bearer peer-token-0123456789abcdef";
        AtomicReference<byte[]> a = new AtomicReference<>();
        HttpServer sa = serve(a, peerToken);
        int pa = sa.getAddress().getPort();
        a.set(CODEC.encode(RegistryTest.record("p", "e1", pa, true)));
        StaticStore without = new StaticStore(List.of("127.0.0.1:" + pa), Duration.ofMillis(50), Duration.ofSeconds(1),
                CODEC, new RegistryCounters(), Optional.empty());
        ConcurrentHashMap<String, InstanceRecord> seenWithout = new ConcurrentHashMap<>();
        try {
            without.start(new RegistryListener() {
                @Override
                public void upsert(InstanceRecord record) {
                    seenWithout.put(record.engineId(), record);
                }

                @Override
                public void remove(String engineId) {
                }

                @Override
                public void replaceAll(Collection<InstanceRecord> records) {
                }

                @Override
                public void refused(String key, String reason) {
                }
            });
            store = new StaticStore(List.of("127.0.0.1:" + pa), Duration.ofMillis(50), Duration.ofSeconds(1), CODEC,
                    new RegistryCounters(), Optional.of(peerToken));
            store.start(listener);

            await("p listed by the store with the token", () -> view.containsKey("p"));
            Thread.sleep(200); // several refreshes of the store without it
            assertTrue(seenWithout.isEmpty(), "a store without the token was answered: " + seenWithout);
            assertTrue(!without.health().reachable(), "its peer refused it: " + without.health());
        } finally {
            without.close();
        }
    }
}
