package io.pdconnector.controlplane;

/**
 * The store of an instance alone (role both on one machine): its own record is the whole fleet.
 * Always reachable; nothing outlives the process.
 */
public final class EmbeddedStore implements RegistryStore {

    private final RegistryCounters counters;
    private volatile boolean published;

    public EmbeddedStore(RegistryCounters counters) {
        this.counters = counters;
    }

    @Override
    public String kind() {
        return "embedded";
    }

    @Override
    public void start(RegistryListener listener) {
        // the registry holds this instance's own record itself; there is no one else to hear from
    }

    @Override
    public void publish(InstanceRecord own) {
        counters.writes.incrementAndGet();
        published = true;
    }

    @Override
    public void withdraw(String engineId) {
        published = false;
    }

    @Override
    public StoreHealth health() {
        return new StoreHealth(true, published, "in-process registry: this instance only");
    }

    @Override
    public void close() {
        published = false;
    }
}
