package io.pdconnector.controlplane;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.pdconnector.config.PdConfig;
import io.pdconnector.controlplane.EtcdClients.EtcdCallException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jboss.logging.Logger;

/**
 * The etcd store: this instance's record at {@code <prefix>instances/<engine-id>} ({@link EtcdOwnRecord}),
 * bound to an etcd lease jetcd keeps alive, and a watch of {@code <prefix>instances/} that pushes every change.
 *
 * <p>Every etcd call and every listener call runs on one worker thread: a publish never races a
 * reconnection, and the listener hears changes in etcd's order. Callers wait for the worker at most
 * {@code callTimeout} and never see an etcd failure: the store remembers the latest record and
 * writes it when it can.
 *
 * <p>A failed call or stream while connected is only a doubt: gRPC may still be moving off a member
 * that just went away, so the store asks etcd again a moment later and calls it lost only if that
 * fails too. While lost the listener hears nothing (its last view stands) and the store retries with
 * a backoff doubling from 100 ms to {@code maxBackoff}; once back it writes the record again (under a
 * new lease if the old one may have expired), reads the whole prefix ({@code replaceAll}) and
 * watches from there.
 */
public final class EtcdStore implements RegistryStore {

    private static final Logger LOG = Logger.getLogger(EtcdStore.class);
    static final Duration FIRST_BACKOFF = EtcdReachability.FIRST_BACKOFF;
    /** How long gRPC takes to route around a member that went away, seen at well under 100 ms. */
    private static final Duration SETTLE = Duration.ofMillis(250);

    private final EtcdSettings settings;
    private final RecordCodec codec;
    private final RegistryCounters counters;
    private final Client client;
    private final String instancesPrefix;
    private final EtcdWorker worker;
    private final EtcdLease lease;
    private final EtcdReachability reachability;
    private final EtcdOwnRecord ownRecord;
    private volatile boolean closed;
    private final AtomicBoolean clientClosed = new AtomicBoolean();

    // The worker's state; volatile where health() reads it.
    private volatile EtcdView view;
    private EtcdWatch watch;
    private ScheduledFuture<?> retry;
    private ScheduledFuture<?> check;

    /** Builds the client (no connection yet); unusable TLS files are an {@link IllegalArgumentException} here. */
    public EtcdStore(EtcdSettings settings, RecordCodec codec, RegistryCounters counters) {
        this.settings = Objects.requireNonNull(settings, "settings");
        this.codec = Objects.requireNonNull(codec, "codec");
        this.counters = Objects.requireNonNull(counters, "counters");
        this.instancesPrefix = settings.prefix() + "instances/";
        this.client = EtcdClients.build(settings);
        this.worker = new EtcdWorker("etcd-store", settings.callTimeout());
        this.reachability = new EtcdReachability(settings.endpoints(), settings.maxBackoff(), counters.reconnects);
        this.lease = new EtcdLease(client.getLeaseClient(), settings.ttl(), settings.callTimeout(), new LeaseEvents());
        this.ownRecord = new EtcdOwnRecord(client::getKVClient, instancesPrefix, codec, lease, settings.callTimeout(),
                counters.writes);
    }

    @Override
    public String kind() {
        return "etcd";
    }

    @Override
    public void start(RegistryListener listener) {
        Objects.requireNonNull(listener, "listener");
        worker.post(() -> {
            if (view != null) {
                throw new IllegalStateException("the etcd store is already started");
            }
            view = new EtcdView(listener, codec, counters, instancesPrefix);
            resync();
        });
    }

    @Override
    public void publish(InstanceRecord own) {
        ownRecord.want(Objects.requireNonNull(own, "own"));
        if (!closed) {
            worker.runAndWait(this::writeOwnIfDue);
        }
    }

    @Override
    public void withdraw(String engineId) {
        ownRecord.unwant(engineId);
        if (!closed) {
            worker.runAndWait(() -> ownRecord.remove(engineId));
        }
    }

    @Override
    public StoreHealth health() {
        EtcdOwnRecord.Status own = ownRecord.status();
        boolean reachable = !closed && reachability.answering() && (!lease.held() || lease.live());
        return new StoreHealth(reachable, own.published(), detail(reachable, own.sentence()));
    }

    /** Stops watching and keeping alive (the record expires with its lease), closes the client; never throws. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        worker.stop(this::shutdown);
        // In case the worker was too busy to run shutdown in time.
        closeClient();
    }

    // ---- on the worker thread ----

    /** Writes the own record (if any), reads the prefix and watches it; on failure, tries again later. */
    private void resync() {
        retry = null;
        if (closed) {
            return;
        }
        if (!reachability.answering()) {
            EtcdClients.resetConnectBackoff(client);
        }
        try {
            InstanceRecord own = ownRecord.wanted();
            if (own != null) {
                ownRecord.write(own);
            }
            if (view != null) {
                rewatch();
            }
            reachability.answered(view == null ? 0 : view.size());
        } catch (EtcdCallException e) {
            lost(e);
        }
    }

    private void rewatch() throws EtcdCallException {
        closeWatch();
        ByteSequence prefix = EtcdClients.bytes(instancesPrefix);
        GetResponse all = EtcdClients.await(client.getKVClient().get(prefix, GetOption.builder().isPrefix(true)
                .build()), settings.callTimeout());
        view.replaceAll(all.getKvs());
        watch = EtcdWatch.open(client.getWatchClient(), prefix, all.getHeader().getRevision() + 1, new WatchEvents());
    }

    private void writeOwnIfDue() {
        // While a reconnection is pending, it writes the latest record itself.
        if (closed || retry != null) {
            return;
        }
        InstanceRecord own = ownRecord.due();
        if (own == null) {
            return;
        }
        try {
            ownRecord.write(own);
        } catch (EtcdCallException e) {
            if (reachability.answering()) {
                doubt();
            } else {
                lost(e);
            }
        }
    }

    /** Something failed while connected: ask etcd again shortly, and only then call it lost. */
    private void doubt() {
        if (!closed && reachability.answering() && retry == null && check == null) {
            check = worker.schedule(this::confirm, SETTLE);
        }
    }

    private void confirm() {
        check = null;
        if (probe()) {
            writeOwnIfDue();
        }
    }

    /** A watch jetcd ended: taken over from where it stopped, or, where that is wrong, everything read again. */
    private void watchEnded(EtcdWatch ended) {
        watch = null;
        if (ended.mustReadAgain()) {
            LOG.infof("the etcd watch of %s cannot be taken over; reading it all again", instancesPrefix);
            resync();
        } else {
            worker.schedule(() -> {
                if (watch == null && probe()) {
                    watch = EtcdWatch.reopen(client.getWatchClient(), EtcdClients.bytes(instancesPrefix), ended);
                }
            }, SETTLE);
        }
    }

    /** Whether etcd answers while connected (false when not connected, closed or reconnecting). */
    private boolean probe() {
        if (closed || !reachability.answering() || retry != null) {
            return false;
        }
        try {
            EtcdClients.await(client.getKVClient().get(EtcdClients.bytes(instancesPrefix), GetOption.builder()
                    .isPrefix(true).withCountOnly(true).build()), settings.callTimeout());
            return true;
        } catch (EtcdCallException e) {
            lost(e);
            return false;
        }
    }

    private void lost(EtcdCallException e) {
        reachability.failed(e.getMessage());
        closeWatch();
        if (retry == null && !closed) {
            retry = worker.schedule(this::resync, reachability.nextBackoff());
        }
    }

    private void closeWatch() {
        if (watch != null) {
            watch.close();
            watch = null;
        }
    }

    private void shutdown() {
        for (ScheduledFuture<?> pending : new ScheduledFuture<?>[] {retry, check}) {
            if (pending != null) {
                pending.cancel(false);
            }
        }
        retry = null;
        check = null;
        closeWatch();
        lease.abandon();
        closeClient();
    }

    // ---- plumbing ----

    private void closeClient() {
        if (!clientClosed.compareAndSet(false, true)) {
            return;
        }
        try {
            client.close();
        } catch (RuntimeException e) {
            LOG.debugf(e, "closing the etcd client");
        }
    }

    private String detail(boolean reachable, String ownPart) {
        EtcdView v = view;
        int records = v == null ? 0 : v.size();
        return closed ? "etcd store closed" : reachability.describe(reachable, records, instancesPrefix, ownPart);
    }

    private final class WatchEvents implements EtcdWatch.Events {
        @Override
        public void changed(EtcdWatch w, List<WatchEvent> events) {
            worker.post(() -> {
                if (w == watch) {
                    view.apply(events);
                }
            });
        }

        @Override
        public void troubled(EtcdWatch w, Throwable cause) {
            worker.post(() -> {
                if (w == watch) {
                    doubt();
                }
            });
        }

        @Override
        public void ended(EtcdWatch w) {
            worker.post(() -> {
                if (w == watch && reachability.answering() && retry == null) {
                    watchEnded(w);
                }
            });
        }
    }

    private final class LeaseEvents implements EtcdLease.Events {
        @Override
        public void troubled(Throwable cause) {
            worker.post(EtcdStore.this::doubt);
        }

        @Override
        public void lost(long leaseId) {
            worker.post(() -> {
                lease.drop(leaseId);
                if (reachability.answering()) {
                    writeOwnIfDue();
                }
            });
        }
    }
}
