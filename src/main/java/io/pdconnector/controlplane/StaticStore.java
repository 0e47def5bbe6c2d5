package io.pdconnector.controlplane;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.jboss.logging.Logger;

/**
 * The small fleet without etcd: the operator lists every peer's address, and this instance fetches
 * each one's own record ({@code GET /v1/registry/self}) now and every refresh interval. Only those
 * addresses are ever contacted. A peer that has not answered for {@link #MISSED_REFRESHES} refreshes
 * in a row leaves the view until it answers again; an address answering for another address's
 * engine, or as an engine another address already is, is refused. Each fetch carries the peer token
 * ({@code config.ClientTokens}) when one is configured: a peer with auth on answers only that.
 */
public final class StaticStore implements RegistryStore {

    private static final Logger LOG = Logger.getLogger(StaticStore.class);
    static final int MISSED_REFRESHES = 3;

    private final List<String> peers;
    private final Duration refresh;
    private final Duration timeout;
    private final RecordCodec codec;
    private final RegistryCounters counters;
    private final Optional<String> authorization;
    private final HttpClient http;
    private final ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "pd-registry-static");
        t.setDaemon(true);
        return t;
    });
    /** address -> engine id it answered as; address -> refreshes missed in a row (refresh thread only). */
    private final Map<String, String> engines = new HashMap<>();
    private final Map<String, Integer> missed = new HashMap<>();
    private volatile int answered;
    private volatile boolean published;

    public StaticStore(List<String> peers, Duration refresh, Duration timeout, RecordCodec codec,
            RegistryCounters counters, Optional<String> authorization) {
        this.peers = List.copyOf(peers);
        this.refresh = refresh;
        this.timeout = timeout;
        this.codec = codec;
        this.counters = counters;
        this.authorization = authorization;
        this.http = HttpClient.newBuilder().connectTimeout(timeout).followRedirects(HttpClient.Redirect.NEVER).build();
    }

    @Override
    public String kind() {
        return "static";
    }

    @Override
    public void start(RegistryListener listener) {
        scheduler.scheduleWithFixedDelay(() -> refreshAll(listener), 0, refresh.toMillis(), TimeUnit.MILLISECONDS);
    }

    private void refreshAll(RegistryListener listener) {
        int ok = 0;
        for (String address : peers) {
            try {
                ok += refreshOne(address, listener) ? 1 : 0;
            } catch (RuntimeException e) {
                LOG.warnf(e, "refreshing %s failed", address);
            }
        }
        answered = ok;
    }

    private boolean refreshOne(String address, RegistryListener listener) {
        InstanceRecord record;
        try {
            record = codec.decode(fetch(address));
        } catch (RecordCodec.InvalidRecordException e) {
            listener.refused(address, e.getMessage());
            miss(address, listener, e.getMessage());
            return false;
        } catch (IOException e) {
            miss(address, listener, e.getMessage());
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
        missed.remove(address);
        if (!record.address().equals(address)) {
            listener.refused(address, "answers as " + record.engineId() + " at " + record.address());
            return true;
        }
        String claimedBy = engines.entrySet().stream().filter(e -> e.getValue().equals(record.engineId())
                && !e.getKey().equals(address)).map(Map.Entry::getKey).findFirst().orElse(null);
        if (claimedBy != null) {
            listener.refused(address, "answers as " + record.engineId() + ", which " + claimedBy + " already is");
            return true;
        }
        String before = engines.put(address, record.engineId());
        if (before != null && !before.equals(record.engineId())) {
            listener.remove(before);
        }
        counters.watchEvents.incrementAndGet();
        listener.upsert(record);
        return true;
    }

    private void miss(String address, RegistryListener listener, String why) {
        int n = missed.merge(address, 1, Integer::sum);
        if (n == MISSED_REFRESHES) {
            LOG.warnf("peer %s has not answered %d refreshes in a row (%s); it leaves the view", address, n, why);
            String engineId = engines.remove(address);
            if (engineId != null) {
                counters.watchEvents.incrementAndGet();
                listener.remove(engineId);
            }
        }
    }

    private byte[] fetch(String address) throws IOException, InterruptedException {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://" + address + "/v1/registry/self"))
                .timeout(timeout).header("Accept", "application/json");
        authorization.ifPresent(a -> request.header("Authorization", a));
        HttpResponse<InputStream> response = http.send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
        try (InputStream body = response.body()) {
            if (response.statusCode() == 401 || response.statusCode() == 403) {
                throw new IOException("HTTP " + response.statusCode() + ": the peer refused "
                        + (authorization.isPresent() ? "this instance's peer token" : "a fetch without a token")
                        + " (pd.auth.tokens.peer)");
            }
            if (response.statusCode() != 200) {
                throw new IOException("HTTP " + response.statusCode());
            }
            byte[] bytes = body.readNBytes(RecordCodec.MAX_RECORD_BYTES + 1);
            if (bytes.length > RecordCodec.MAX_RECORD_BYTES) {
                throw new IOException("record larger than " + RecordCodec.MAX_RECORD_BYTES + " bytes");
            }
            return bytes;
        }
    }

    @Override
    public void publish(InstanceRecord own) {
        counters.writes.incrementAndGet(); // peers read it from this instance's /v1/registry/self
        published = true;
    }

    @Override
    public void withdraw(String engineId) {
        published = false;
    }

    @Override
    public StoreHealth health() {
        int n = answered;
        return new StoreHealth(peers.isEmpty() || n > 0, published,
                n + " of " + peers.size() + " configured peers answered the last refresh");
    }

    @Override
    public void close() {
        scheduler.shutdownNow();
    }
}
