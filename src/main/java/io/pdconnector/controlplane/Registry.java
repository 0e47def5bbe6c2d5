package io.pdconnector.controlplane;

import io.pdconnector.error.UntrustedPeerException;
import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.protocol.MetadataDirectory;
import io.pdconnector.protocol.ProducerIncarnation;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.jboss.logging.Logger;

/**
 * This instance's view of the fleet, and the only source D trusts: a producer is who its record
 * says, at the address its record gives, with the metadata its record carries. The store fills the
 * view; this instance's own record is kept here and written through the store. A lost store keeps
 * the last view: instances go on serving the fleet they knew.
 */
public final class Registry implements MetadataDirectory, RegistryListener, AutoCloseable {

    private static final Logger LOG = Logger.getLogger(Registry.class);
    public static final String INVALID_RECORD = "invalid_record";
    public static final String DUPLICATE_ENGINE = "duplicate_engine";

    private final RegistryStore store;
    private final InstantSource clock;
    private final Duration publishMinInterval;
    private final RegistryCounters counters;
    private final Map<String, InstanceRecord> view = new ConcurrentHashMap<>();
    private final List<ProducerListener> listeners = new CopyOnWriteArrayList<>();
    private final Map<String, AtomicLong> refused = new ConcurrentHashMap<>();
    private volatile InstanceRecord own;
    private volatile boolean publishedOnce;
    private long lastWriteMillis = Long.MIN_VALUE / 2;

    public Registry(RegistryStore store, InstanceRecord initial, Duration publishMinInterval, RegistryCounters counters,
            InstantSource clock) {
        this.store = store;
        this.own = RecordCodec.check(initial);
        this.publishMinInterval = publishMinInterval;
        this.counters = counters;
        this.clock = clock;
        for (String reason : List.of(UntrustedPeerException.UNKNOWN_PEER, UntrustedPeerException.PEER_MISMATCH,
                INVALID_RECORD, DUPLICATE_ENGINE)) {
            refused.put(reason, new AtomicLong());
        }
    }

    /** Told when a producer appears, restarts (new epoch) or leaves. */
    public interface ProducerListener {
        void announced(ProducerIncarnation incarnation);

        void withdrawn(String engineId);
    }

    /** Starts the store and writes this instance's first record (not yet a producer, not yet ready). */
    public void start() {
        view.put(own.engineId(), own);
        store.start(this);
        write(own);
    }

    /** Every producer known now is announced to {@code listener} at once, and every change after. */
    public void subscribe(ProducerListener listener) {
        listeners.add(listener);
        view.values().stream().filter(InstanceRecord::producer).forEach(r -> listener.announced(incarnation(r)));
    }

    // ---- this instance's record

    @Override
    public synchronized void publish(String engineId, List<HandshakeMetadata> ranks) {
        requireSelf(engineId);
        replaceOwn(new InstanceRecord(own.engineId(), own.role(), own.host(), own.port(), own.tpSize(), own.epoch(),
                own.connectorVersion(), own.compatHash(), ranks, own.capacity(), own.ready(), clock.millis()));
    }

    @Override
    public synchronized void withdraw(String engineId) {
        requireSelf(engineId);
        replaceOwn(new InstanceRecord(own.engineId(), own.role(), own.host(), own.port(), own.tpSize(), own.epoch(),
                own.connectorVersion(), own.compatHash(), List.of(), own.capacity(), false, clock.millis()));
    }

    /**
     * Capacity and readiness changed: written if they differ from the record and the last write is at
     * least pd.registry.publish-min-interval old, so a busy instance writes at a bounded rate.
     */
    public synchronized boolean updateCapacity(InstanceRecord.Capacity capacity, boolean ready) {
        if (capacity.equals(own.capacity()) && ready == own.ready()) {
            return false;
        }
        long now = clock.millis();
        if (now - lastWriteMillis < publishMinInterval.toMillis()) {
            return false;
        }
        replaceOwn(own.with(capacity, ready, now));
        return true;
    }

    private void replaceOwn(InstanceRecord record) {
        boolean wasProducer = own.producer();
        own = RecordCodec.check(record);
        view.put(own.engineId(), own);
        write(own);
        if (own.producer()) {
            listeners.forEach(l -> l.announced(incarnation(own)));
        } else if (wasProducer) {
            listeners.forEach(l -> l.withdrawn(own.engineId()));
        }
    }

    private void write(InstanceRecord record) {
        lastWriteMillis = clock.millis();
        store.publish(record);
    }

    private void requireSelf(String engineId) {
        if (!own.engineId().equals(engineId)) {
            throw new IllegalArgumentException("this instance is " + own.engineId() + ", it cannot publish " + engineId);
        }
    }

    // ---- what D asks

    @Override
    public Optional<ProducerIncarnation> lookup(String engineId) {
        InstanceRecord r = view.get(engineId);
        return r == null || !r.producer() ? Optional.empty() : Optional.of(incarnation(r));
    }

    /**
     * The registry vouches for the producer {@code params} name, at the address they give; else 409
     * unknown_peer or peer_mismatch (counted), and nothing is contacted.
     */
    public void requireTrusted(KvTransferParams params) {
        String engineId = params.remoteEngineId();
        InstanceRecord r = engineId == null ? null : view.get(engineId);
        if (r == null || !r.producer()) {
            refused.get(UntrustedPeerException.UNKNOWN_PEER).incrementAndGet();
            throw UntrustedPeerException.unknown(engineId);
        }
        if (!r.host().equals(params.remoteHost()) || r.port() != params.remotePort()) {
            refused.get(UntrustedPeerException.PEER_MISMATCH).incrementAndGet();
            throw UntrustedPeerException.mismatch(engineId, r.address());
        }
    }

    private static ProducerIncarnation incarnation(InstanceRecord r) {
        return new ProducerIncarnation(r.engineId(), r.epoch(), r.ranks());
    }

    // ---- what the store reports

    @Override
    public void upsert(InstanceRecord record) {
        if (isSelf(record)) {
            return;
        }
        InstanceRecord previous = view.put(record.engineId(), record);
        boolean restarted = previous == null || !previous.epoch().equals(record.epoch());
        if (record.producer() && (restarted || !previous.producer())) {
            listeners.forEach(l -> l.announced(incarnation(record)));
        } else if (!record.producer() && previous != null && previous.producer()) {
            listeners.forEach(l -> l.withdrawn(record.engineId()));
        }
    }

    @Override
    public void remove(String engineId) {
        if (own.engineId().equals(engineId)) {
            return; // our own record expired while the store was unreachable: the store writes it again
        }
        InstanceRecord previous = view.remove(engineId);
        if (previous != null && previous.producer()) {
            listeners.forEach(l -> l.withdrawn(engineId));
        }
    }

    @Override
    public void replaceAll(Collection<InstanceRecord> records) {
        List<String> keep = records.stream().map(InstanceRecord::engineId).toList();
        for (String engineId : List.copyOf(view.keySet())) {
            if (!keep.contains(engineId) && !own.engineId().equals(engineId)) {
                remove(engineId);
            }
        }
        records.forEach(this::upsert);
    }

    @Override
    public void refused(String key, String reason) {
        refused.get(INVALID_RECORD).incrementAndGet();
        LOG.warnf("registry record %s ignored: %s", key, reason);
    }

    /** Our engine id under another epoch is a second instance claiming it: refused, loudly. */
    private boolean isSelf(InstanceRecord record) {
        if (!own.engineId().equals(record.engineId())) {
            return false;
        }
        if (!own.epoch().equals(record.epoch())) {
            refused.get(DUPLICATE_ENGINE).incrementAndGet();
            LOG.errorf("another instance at %s publishes this instance's engine id %s (epoch %s, ours %s); engine ids"
                    + " must be unique in a fleet", record.address(), record.engineId(), record.epoch(), own.epoch());
        }
        return true;
    }

    // ---- what operators see

    public InstanceRecord self() {
        return own;
    }

    /** Every instance this one knows, by engine id. */
    public List<InstanceRecord> instances() {
        return view.values().stream().sorted(Comparator.comparing(InstanceRecord::engineId)).toList();
    }

    public String storeKind() {
        return store.kind();
    }

    public RegistryStore.StoreHealth health() {
        RegistryStore.StoreHealth h = store.health();
        if (h.ownPublished()) {
            publishedOnce = true;
        }
        return h;
    }

    /**
     * Whether the store has held this instance's record at some point since start: an instance whose
     * record was never written cannot be found by anyone; one whose store went away since is still
     * found by everyone who saw it.
     */
    public boolean publishedOnce() {
        return publishedOnce || health().ownPublished();
    }

    public RegistryCounters counters() {
        return counters;
    }

    /** Peers refused, by reason: unknown_peer, peer_mismatch, invalid_record, duplicate_engine. */
    public Map<String, AtomicLong> refusals() {
        return refused;
    }

    /** Withdraws this instance's record and closes the store. */
    @Override
    public void close() {
        try {
            store.withdraw(own.engineId());
        } catch (RuntimeException e) {
            LOG.warnf("withdrawing %s from the registry failed: %s", own.engineId(), e.getMessage());
        } finally {
            store.close();
        }
    }
}
