package io.pdconnector.router;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.pdconnector.config.AuthRole;
import io.pdconnector.config.ClientTokens;
import io.pdconnector.config.PdConfig;
import io.pdconnector.controlplane.InstanceRecord;
import io.pdconnector.controlplane.Registry;
import io.pdconnector.error.ClientGoneException;
import io.pdconnector.error.PeerFailureException;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.jboss.logging.Logger;

/**
 * The router role: each OpenAI request becomes a P leg ({@code do_remote_decode}, one token, no
 * stream) and a D leg carrying P's {@code kv_transfer_params} verbatim, on a P and a D picked from the
 * registry. A failed attempt aborts P's lease and, when {@link RetryPolicy} says a new prefill can
 * cure it, is retried on another pick, up to {@code pd.router.max-retries}; only D's successful reply
 * (or the last failure) reaches the client.
 */
@ApplicationScoped
public class RouterService {

    private static final Logger LOG = Logger.getLogger(RouterService.class);

    private final boolean active;
    private final RouterSettings settings;
    private final ObjectMapper json;
    private final InFlight inFlight = new InFlight();
    private final Picker picker;
    private final RetryPolicy retryPolicy;
    private final RouterMeters meters;
    private final FleetClient fleet;
    private final RouteAttempt.Legs legs;

    @Inject
    public RouterService(PdConfig config, Registry registry, MeterRegistry meterRegistry, ObjectMapper json) {
        this(config.role() == PdConfig.Role.router, RouterSettings.from(config.router(),
                ClientTokens.from(config.auth()).authorization(AuthRole.router)), registry::instances,
                meterRegistry, json);
    }

    RouterService(boolean active, RouterSettings settings, Supplier<? extends Collection<InstanceRecord>> instances,
            MeterRegistry meterRegistry, ObjectMapper json) {
        this.active = active;
        this.settings = settings;
        this.json = json;
        Random random = new Random();
        this.picker = new Picker(() -> List.copyOf(instances.get()), PickPolicy.named(settings.policy(), random),
                PickPolicy.named(settings.policy(), random), inFlight);
        this.retryPolicy = new RetryPolicy(settings.maxRetries());
        // only a router's meters are exported (from its start, every known series at 0); another role routes nothing
        this.meters = new RouterMeters(active ? meterRegistry : new SimpleMeterRegistry());
        this.fleet = new FleetClient(settings.connectTimeout(), settings.authorization());
        this.legs = new RouteAttempt.Legs(settings, fleet, inFlight, meters, json);
    }

    /**
     * A router builds its meters at start, not at its first request, so that its series are scraped from
     * the first scrape on (a bean is otherwise made when first used).
     */
    static void startWithTheRouter(@Observes StartupEvent started, PdConfig config, RouterService router) {
        if (config.role() == PdConfig.Role.router) {
            router.active();
        }
    }

    /** Whether this instance is a router ({@code pd.role=router}). */
    public boolean active() {
        return active;
    }

    /** A P and a D for one request, as {@code POST /v1/route} answers it. */
    public Pick pick() {
        return picker.pick(Set.of(), Set.of());
    }

    /** {@code GET /v1/models} as a decoder answers it. */
    public Routed models() {
        InstanceRecord d = picker.anyDecoder();
        try {
            HttpResponse<byte[]> r = RouteAttempt.await(fleet.get(d, "/v1/models", settings.prefillTimeout()),
                    settings.prefillTimeout(), new ClientSignal());
            return new Routed(r.statusCode(), RouteAttempt.contentType(r), r.body(), null, new Pick(null, d), List.of(),
                    "", () -> { });
        } catch (IOException | TimeoutException e) {
            throw new PeerFailureException("decoder " + d.engineId() + " at " + d.address() + " did not answer the"
                    + " model list: " + e.getMessage(), e);
        }
    }

    /**
     * Routes one OpenAI request ({@code path}: /v1/completions or /v1/chat/completions) whose body is
     * {@code client}, under {@code requestId}. Throws 503 no-instance when the registry has no pair,
     * 502 when the last attempt got no answer.
     */
    public Routed route(String path, ObjectNode client, String requestId, ClientSignal signal) {
        long start = System.nanoTime();
        boolean stream = client.path("stream").asBoolean(false);
        byte[] prefillBody = legs.bytes(LegBodies.prefill(client));
        Set<String> avoidP = new HashSet<>();
        Set<String> avoidD = new HashSet<>();
        List<String> retries = new ArrayList<>();
        long retryNanos = 0;
        for (int attempt = 0; ; attempt++) {
            String id = RequestAttempts.id(requestId, attempt);
            Pick pick = picker.pick(avoidP, avoidD);
            long attemptStart = System.nanoTime();
            RouteAttempt a = new RouteAttempt(legs, path, client, stream, prefillBody, id, pick, signal);
            Optional<Failure> failed = a.run();
            if (signal.gone()) {
                if (a.prefillSent) {
                    abort(pick.producer(), id, "client");
                }
                meters.request(false);
                throw new ClientGoneException(requestId, "the client of request " + requestId
                        + " went away before its answer; P's lease was aborted");
            }
            if (failed.isEmpty()) {
                meters.request(true);
                meters.leg("total", System.nanoTime() - start);
                String timing = a.timing(retries.size(), retryNanos);
                return new Routed(a.status, a.contentType, a.body, a.stream, pick, retries, timing,
                        () -> abort(pick.producer(), id, "client"));
            }
            Failure f = failed.get();
            if (RetryPolicy.abortsProducer(f)) {
                abort(pick.producer(), id, f.leg() == Failure.Leg.DECODE ? "decode" : "prefill");
            }
            Optional<String> reason = retryPolicy.retry(f, attempt);
            LOG.debugf("request %s attempt %d on %s -> %s failed: %s %s (%s); %s", requestId, attempt,
                    pick.producer().engineId(), pick.decoder().engineId(), f.leg(), f.status(), f.reason(),
                    reason.map(r -> "retrying (" + r + ")").orElse("answered as it is"));
            if (reason.isEmpty()) {
                meters.request(false);
                meters.leg("total", System.nanoTime() - start);
                if (!f.answered()) {
                    throw new PeerFailureException(f.leg().name().toLowerCase(java.util.Locale.ROOT) + " leg on "
                            + (f.leg() == Failure.Leg.PREFILL ? pick.producer() : pick.decoder()).engineId()
                            + " got no answer: " + f.detail(), null);
                }
                return new Routed(a.status, a.contentType, a.body, null, pick, retries,
                        a.timing(retries.size(), retryNanos), () -> { });
            }
            meters.retried(reason.get());
            retries.add(reason.get());
            retryNanos += System.nanoTime() - attemptStart;
            if (RetryPolicy.blamesProducer(f)) {
                avoidP.add(pick.producer().engineId());
            } else {
                avoidD.add(pick.decoder().engineId());
            }
        }
    }

    /** Sent at once and not awaited: the answer (or the retry) does not wait for P to free its blocks. */
    private void abort(InstanceRecord producer, String id, String cause) {
        meters.aborted(cause);
        fleet.abort(producer, id, settings.abortTimeout()).whenComplete((r, e) -> {
            if (e != null) {
                LOG.debugf("abort of %s on %s failed: %s", id, producer.engineId(), e.toString());
            }
        });
    }
}
