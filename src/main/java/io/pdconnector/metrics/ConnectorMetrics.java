package io.pdconnector.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.pdconnector.config.PdConfig;
import io.pdconnector.consumer.ConsumerCounters;
import io.pdconnector.controlplane.Registry;
import io.pdconnector.controlplane.RegistryCounters;
import io.pdconnector.consumer.DeclineReason;
import io.pdconnector.consumer.PullObserver;
import io.pdconnector.loop.LoopGauges;
import io.pdconnector.producer.LeaseObserver;
import io.pdconnector.producer.ProducerCounters;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.ToDoubleFunction;
import java.util.stream.IntStream;

/**
 * Prometheus metrics. Meters are built once; the loops' counters and gauges are read at scrape time,
 * so nothing looks a meter up per transfer. Upstream names (vLLM's NIXL connector's {@code nixl_*})
 * carry the configured prefix ({@code pd.metrics.prefix}: none or {@code vllm:}); the project's own
 * are {@code pd_*}. Upstream-named meters carry upstream's labels, {@code model_name} and {@code engine}, so
 * a vLLM dashboard's selectors match them.
 */
@ApplicationScoped
public class ConnectorMetrics implements LeaseObserver, PullObserver {

    /** vLLM 0.32's buckets ({@code NixlPromMetrics}), so upstream dashboards' quantiles read the same. */
    private static final double[] UPSTREAM_POST_SECONDS =
            {0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0};
    private static final double[] UPSTREAM_XFER_SECONDS =
            Arrays.copyOfRange(UPSTREAM_POST_SECONDS, 1, UPSTREAM_POST_SECONDS.length);
    /** 2 KiB to 8 GiB, each bucket four times the last. */
    private static final double[] UPSTREAM_BYTES = IntStream.iterate(1, i -> i < 25, i -> i + 2)
            .mapToDouble(i -> Math.pow(2, 10 + i)).toArray();
    private static final double[] UPSTREAM_DESCRIPTORS =
            {10, 20, 30, 50, 75, 100, 200, 400, 1000, 2000, 4000, 10000, 20000, 50000};

    private final MeterRegistry registry;
    private final String upstream;
    private final Tags upstreamTags;
    private final Timer xferTime;
    private final Timer postTime;
    private final DistributionSummary bytesTransferred;
    private final DistributionSummary descriptors;
    private final Counter failedTransfers;
    private final Timer leaseDuration;
    private final Map<DeclineReason, Counter> declines = new EnumMap<>(DeclineReason.class);
    private final Map<String, Timer> steps;
    /** pd_kv_read_transport, one per (peer, decode rank, prefill rank): replaced when what the READs take changes. */
    private final Map<List<Object>, Gauge> readTransports = new ConcurrentHashMap<>();

    public ConnectorMetrics(MeterRegistry registry, PdConfig config) {
        this.registry = registry;
        this.upstream = config.metrics().prefix().equals("none") ? "" : config.metrics().prefix();
        this.upstreamTags = Tags.of("model_name", config.metrics().modelName(), "engine", config.metrics().engine());
        xferTime = Timer.builder(upstream + "nixl_xfer_time").tags(upstreamTags)
                .description("Block READ time, post to completion")
                .serviceLevelObjectives(seconds(UPSTREAM_XFER_SECONDS)).register(registry);
        postTime = Timer.builder(upstream + "nixl_post_time").tags(upstreamTags)
                .description("Time spent in the post call of a block READ")
                .serviceLevelObjectives(seconds(UPSTREAM_POST_SECONDS)).register(registry);
        bytesTransferred = DistributionSummary.builder(upstream + "nixl_bytes_transferred").tags(upstreamTags)
                .description("Bytes per block READ").serviceLevelObjectives(UPSTREAM_BYTES).register(registry);
        descriptors = DistributionSummary.builder(upstream + "nixl_num_descriptors").tags(upstreamTags)
                .description("Descriptors per block READ").serviceLevelObjectives(UPSTREAM_DESCRIPTORS)
                .register(registry);
        failedTransfers = Counter.builder(upstream + "nixl_num_failed_transfers").tags(upstreamTags)
                .description("Block READs that failed")
                .register(registry);
        leaseDuration = Timer.builder("pd_lease_duration").description("How long P held a lease, export to release")
                .publishPercentileHistogram().register(registry);
        for (DeclineReason reason : DeclineReason.values()) {
            declines.put(reason, Counter.builder("pd_pull_declines").tag("reason", reason.wire())
                    .description("Pulls whose KV was not used, by reason (recomputed ones included)").register(registry));
        }
        steps = Map.of("producer", stepTimer("producer"), "consumer", stepTimer("consumer"));
    }

    private static Duration[] seconds(double[] buckets) {
        return Arrays.stream(buckets).mapToObj(s -> Duration.ofNanos(Math.round(s * 1e9))).toArray(Duration[]::new);
    }

    private Timer stepTimer(String loop) {
        return Timer.builder("pd_step_duration").tag("loop", loop).description("Duration of steps that did work")
                .publishPercentileHistogram().register(registry);
    }

    public void bindProducer(ProducerCounters c, LoopGauges g) {
        upstreamCounter("nixl_num_kv_expired_reqs", "Leases that expired unread", c.leasesExpired);
        upstreamCounter("nixl_num_notifications_after_expiry", "Read notifications naming a lease P no longer"
                + " holds (expired, aborted, or its id taken by a later attempt): the reader may have read blocks"
                + " already reused; one per notification", c.notificationsAfterExpiry);
        counter("pd_leases_max_lifetime", "Expired leases whose heartbeats asked for more than pd.lease.max-lifetime"
                + " (also counted as expired)", c.leasesAtMaxLifetime);
        FunctionCounter.builder("pd_notifications_refused", c.notificationsRefusedNonce, AtomicLong::doubleValue)
                .tag("reason", "nonce").description("Read notifications and heartbeats P refused: without the"
                        + " lease's nonce, or claiming more readers than a TP mapping allows").register(registry);
        FunctionCounter.builder("pd_notifications_refused", c.notificationsRefusedConsumers, AtomicLong::doubleValue)
                .tag("reason", "consumers").description("Read notifications and heartbeats P refused: without the"
                        + " lease's nonce, or claiming more readers than a TP mapping allows").register(registry);
        counter("pd_stale_notifications_ignored", "Read notifications whose nonce was not the live lease's",
                c.staleNotifications);
        counter("pd_duplicate_notifications_ignored", "Read notifications from a reader already counted for that"
                + " lease and rank (a duplicated message cannot stand in for a second reader)",
                c.duplicateNotifications);
        counter("pd_leases_exported", "Leases exported as kv_transfer_params", c.leasesExported);
        counter("pd_exports_without_slot", "Exports with no free lease slot (no lease fields, L4)", c.exportsWithoutSlot);
        counter("pd_reservations_abandoned", "Engine reservations taken back: not finished before their deadline",
                c.reservationsAbandoned);
        counter("pd_leases_released_by_readers", "Leases released after every reader notified", c.leasesReleasedByReaders);
        counter("pd_heartbeats_applied", "Heartbeats that extended a live lease", c.heartbeatsApplied);
        counter("pd_heartbeats_ignored", "Heartbeats for no live lease (never revive one, L8)", c.heartbeatsIgnored);
        counter("pd_notifications_dropped", "Notifications dropped unread: over the 32 KiB maximum", c.droppedNotifications);
        counter("pd_credit_grants", "Grants of blocks and lease slots to the engine beside P", c.creditsGranted);
        counter("pd_credit_commits", "Requests the engine committed to granted blocks and slots", c.creditCommits);
        counter("pd_credit_grants_expired", "Grants taken back unreturned at their deadline (the engine went away)",
                c.creditsExpired);
        counter("pd_credit_grants_withdrawn", "Grants taken back because the engine never heard the answer to its"
                + " ask (it withdrew the ask)", c.creditsWithdrawn);
        counter("pd_early_notifications", "Read notifications for a granted nonce that reached P before the"
                + " engine's commit; counted for the request at its commit", c.earlyNotifications);
        counter("pd_producer_requests_failed", "Requests failed by an unexpected error in P's step (answered 500)",
                c.requestsFailed);
        gauges("producer", g);
        gauge("pd_slots_in_use", "Lease slots held", g, LoopGauges::slotsInUse);
        gauge("pd_slots_total", "Lease slots per rank", g, LoopGauges::slotsTotal);
    }

    public void bindConsumer(ConsumerCounters c, LoopGauges g) {
        upstreamCounter("nixl_num_lease_check_failures", "Pulls whose lease check failed (L7)", c.leaseCheckFailures);
        upstreamCounter("nixl_num_failed_notifications", "Notifications D could not send", c.notificationFailures);
        FunctionCounter.builder("pd_pulls", c.received, AtomicLong::doubleValue).tag("outcome", "received")
                .description("Pulls by outcome").register(registry);
        FunctionCounter.builder("pd_pulls", c.declined, AtomicLong::doubleValue).tag("outcome", "declined")
                .description("Pulls by outcome").register(registry);
        FunctionCounter.builder("pd_pulls", c.recomputed, AtomicLong::doubleValue).tag("outcome", "recomputed")
                .description("Pulls by outcome").register(registry);
        counter("pd_slot_reads", "Lease-slot READs posted (one per remote rank per step)", c.slotReads);
        counter("pd_heartbeats_sent", "Heartbeat notifications sent", c.heartbeatsSent);
        counter("pd_handshakes", "Handshakes with producer instances (peers loaded)", c.handshakes);
        counter("pd_handshakes_on_pull", "Handshakes a pull waited for: the registry's announcement came later",
                c.handshakesOnPull);
        counter("pd_pulls_given_up_notified", "Aborted or timed-out pulls whose lease D released at once by"
                + " notification", c.givenUpNotices);
        counter("pd_peers_evicted", "Producers dropped to keep pd.consumer.max-peers", c.peersEvicted);
        FunctionCounter.builder("pd_registry_peers_refused", c.peersRefused, AtomicLong::doubleValue)
                .tag("reason", "incompatible").description("Producers refused, by reason").register(registry);
        counter("pd_pulls_expired_unread", "Received or recomputed pulls released after pd.consumer.retention,"
                + " never read nor released", c.expiredUnread);
        counter("pd_pulls_caller_gone", "Pulls whose caller went away (its HTTP client disconnected) before they"
                + " were decided: aborted at once, or never started; expected, not an error", c.callerGone);
        counter("pd_pulls_failed", "Pulls failed by an unexpected error in D's step (answered 500)", c.pullsFailed);
        counter("pd_pull_joins", "Asks of a decode rank that joined a pull another of D's ranks started",
                c.joins);
        counter("pd_reads_quarantined", "Block READs still in flight when their pull ended, held until terminal",
                c.readsQuarantined);
        counter("pd_blocks_quarantined", "D blocks held back with such READs instead of freed at once",
                c.blocksQuarantined);
        gauge("pd_blocks_in_quarantine", "D blocks of ended pulls a READ still in flight may write", g,
                LoopGauges::quarantined);
        gauges("consumer", g);
    }

    /** The control plane: writes of this instance's record, changes heard, reconnects, refusals. */
    public void bindRegistry(Registry r) {
        RegistryCounters c = r.counters();
        counter("pd_registry_writes", "Writes of this instance's record to the registry store", c.writes);
        counter("pd_registry_watch_events", "Registry changes the store pushed to this instance", c.watchEvents);
        counter("pd_registry_reconnects", "Reconnections of the registry store to its backend", c.reconnects);
        r.refusals().forEach((reason, n) -> FunctionCounter.builder("pd_registry_peers_refused", n,
                AtomicLong::doubleValue).tag("reason", reason).description("Producers refused, by reason")
                .register(registry));
        Gauge.builder("pd_registry_instances", r, x -> x.instances().size())
                .description("Instances in this instance's view of the fleet").register(registry);
        Gauge.builder("pd_registry_reachable", r, x -> x.health().reachable() ? 1 : 0)
                .description("1 while the registry store answers").register(registry);
    }

    private void gauges(String side, LoopGauges g) {
        Gauge.builder("pd_blocks_in_use", g, x -> x.blocksInUse()).tag("side", side).description("KV blocks held")
                .register(registry);
        Gauge.builder("pd_blocks_total", g, x -> x.blocksTotal()).tag("side", side).description("KV blocks")
                .register(registry);
        Gauge.builder("pd_requests_live", g, x -> x.liveRequests()).tag("side", side)
                .description("Leases held (producer) or pulls not yet released (consumer)").register(registry);
        Gauge.builder("pd_queue_depth", g, x -> x.queued()).tag("side", side)
                .description("Commands waiting for the step loop").register(registry);
        FunctionCounter.builder("pd_commands_refused", g, LoopGauges::commandsRefused).tag("side", side)
                .description("Requests refused 503 queue-full: the step loop's command queue was full")
                .register(registry);
    }

    private void upstreamCounter(String name, String help, AtomicLong value) {
        FunctionCounter.builder(upstream + name, value, AtomicLong::doubleValue).tags(upstreamTags).description(help)
                .register(registry);
    }

    private void counter(String name, String help, AtomicLong value) {
        FunctionCounter.builder(name, value, AtomicLong::doubleValue).description(help).register(registry);
    }

    private void gauge(String name, String help, LoopGauges g, ToDoubleFunction<LoopGauges> f) {
        Gauge.builder(name, g, f).description(help).register(registry);
    }

    @Override
    public void readTransport(String peer, int decodeRank, int prefillRank, String kvMemory, String transport) {
        Gauge gauge = Gauge.builder("pd_kv_read_transport", () -> 1)
                .tags("peer", peer, "decode_rank", Integer.toString(decodeRank), "prefill_rank",
                        Integer.toString(prefillRank), "kv_memory", kvMemory, "transport", transport)
                .description("The transport UCX reported for a decode rank's READs of a producer rank's KV (1 per"
                        + " channel; the transports joined with +, or undetermined)")
                .register(registry);
        Gauge old = readTransports.put(List.of(peer, decodeRank, prefillRank), gauge);
        if (old != null && !old.getId().equals(gauge.getId())) {
            registry.remove(old);
        }
    }

    @Override
    public void readTransportsForgotten(String peer) {
        readTransports.entrySet().removeIf(e -> {
            if (e.getKey().getFirst().equals(peer)) {
                registry.remove(e.getValue());
                return true;
            }
            return false;
        });
    }

    @Override
    public void blockReadDone(long bytes, int count, long postNanos, long transferNanos) {
        xferTime.record(transferNanos, TimeUnit.NANOSECONDS);
        postTime.record(postNanos, TimeUnit.NANOSECONDS);
        bytesTransferred.record(bytes);
        descriptors.record(count);
    }

    @Override
    public void blockReadFailed() {
        failedTransfers.increment();
    }

    @Override
    public void pullDecided(DeclineReason reason, boolean recomputed) {
        if (reason != null) {
            declines.get(reason).increment();
        }
    }

    @Override
    public void leaseReleased(long heldMillis) {
        leaseDuration.record(heldMillis, TimeUnit.MILLISECONDS);
    }

    @Override
    public void step(String loop, long nanos) {
        steps.get(loop.startsWith("producer") ? "producer" : "consumer").record(nanos, TimeUnit.NANOSECONDS);
    }
}
