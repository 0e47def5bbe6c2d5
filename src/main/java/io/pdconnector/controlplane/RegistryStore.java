package io.pdconnector.controlplane;

import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;

/**
 * Where records live: this process ({@code embedded}), the operator's list of addresses
 * ({@code static}) or an etcd cluster ({@code etcd}). A store pushes every change it sees to its
 * listener, including this instance's own record; while it cannot reach its backend it keeps
 * quiet (the registry keeps serving the last view) and says so in {@link #health}.
 */
public interface RegistryStore extends AutoCloseable {

    /** The configuration word: embedded, static or etcd. */
    String kind();

    /** Connects and starts watching; returns at once, reporting through {@code listener} from then on. */
    void start(RegistryListener listener);

    /** Writes (or replaces) this instance's own record, kept alive by the store until {@link #withdraw}. */
    void publish(InstanceRecord own);

    /** Removes this instance's own record (clean shutdown). */
    void withdraw(String engineId);

    StoreHealth health();

    /** Stops watching and keeping alive; never throws. */
    @Override
    void close();

    /** Whether the backend answers and this instance's record is in it (when it has published one). */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record StoreHealth(boolean reachable, boolean ownPublished, String detail) {
    }
}
