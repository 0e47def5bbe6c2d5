package io.pdconnector.controlplane;

import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.watch.WatchEvent;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.jboss.logging.Logger;

/**
 * What an {@link EtcdStore} tells its listener: every value decoded and checked before it is passed
 * on, a value that is not a valid record of the engine its key names refused. Used on the store's
 * worker thread only, so the listener hears changes one at a time and in etcd's order.
 */
final class EtcdView {

    private static final Logger LOG = Logger.getLogger(EtcdView.class);

    private final RegistryListener listener;
    private final RecordCodec codec;
    private final RegistryCounters counters;
    private final String instancesPrefix;
    private final Set<String> engines = new HashSet<>();
    private volatile int size;

    EtcdView(RegistryListener listener, RecordCodec codec, RegistryCounters counters, String instancesPrefix) {
        this.listener = listener;
        this.codec = codec;
        this.counters = counters;
        this.instancesPrefix = instancesPrefix;
    }

    /** Engines the listener was last told about, for the health detail. */
    int size() {
        return size;
    }

    void replaceAll(List<KeyValue> values) {
        List<InstanceRecord> records = new ArrayList<>();
        for (KeyValue kv : values) {
            decode(kv).ifPresent(records::add);
        }
        engines.clear();
        records.forEach(r -> engines.add(r.engineId()));
        size = engines.size();
        tell(() -> listener.replaceAll(List.copyOf(records)));
    }

    void apply(List<WatchEvent> events) {
        for (WatchEvent e : events) {
            counters.watchEvents.incrementAndGet();
            switch (e.getEventType()) {
                case PUT -> decode(e.getKeyValue()).ifPresent(this::upsert);
                case DELETE -> remove(engineId(key(e.getKeyValue())));
                default -> LOG.debugf("etcd watch event of an unknown type on %s ignored", key(e.getKeyValue()));
            }
        }
    }

    private void upsert(InstanceRecord r) {
        engines.add(r.engineId());
        size = engines.size();
        tell(() -> listener.upsert(r));
    }

    private void remove(String engineId) {
        engines.remove(engineId);
        size = engines.size();
        tell(() -> listener.remove(engineId));
    }

    private Optional<InstanceRecord> decode(KeyValue kv) {
        String key = key(kv);
        try {
            InstanceRecord r = codec.decode(kv.getValue().getBytes());
            if (!r.engineId().equals(engineId(key))) {
                // Whoever can write under the prefix must not be able to speak for another engine.
                throw new RecordCodec.InvalidRecordException("the key names engine " + engineId(key)
                        + " but the record is of " + r.engineId());
            }
            return Optional.of(r);
        } catch (RecordCodec.InvalidRecordException e) {
            tell(() -> listener.refused(key, e.getMessage()));
            return Optional.empty();
        }
    }

    private String engineId(String key) {
        return key.startsWith(instancesPrefix) ? key.substring(instancesPrefix.length()) : key;
    }

    private static String key(KeyValue kv) {
        return kv.getKey().toString(StandardCharsets.UTF_8);
    }

    /** A listener that throws must not stop the store from telling it the next change. */
    private static void tell(Runnable call) {
        try {
            call.run();
        } catch (RuntimeException e) {
            LOG.errorf(e, "the registry listener failed on an etcd change; the store carries on");
        }
    }
}
