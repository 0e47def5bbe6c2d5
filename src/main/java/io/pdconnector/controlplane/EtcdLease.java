package io.pdconnector.controlplane;

import io.etcd.jetcd.Lease;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.support.CloseableClient;
import io.grpc.stub.StreamObserver;
import io.pdconnector.controlplane.EtcdClients.EtcdCallException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The etcd lease this instance's record is bound to, kept alive by jetcd's keep-alive stream. Granted
 * once and reused for every write; a new one only when jetcd has given up on it (no answer for a whole
 * TTL: it may have expired) or etcd says it is gone. Changed on the store's worker thread only; the
 * keep-alive answers arrive on jetcd's threads and only move {@link #live}'s horizon or report.
 */
final class EtcdLease {

    /** What the keep-alive stream reports, called on jetcd's threads. */
    interface Events {
        /** The stream failed (jetcd retries it); etcd may be gone. */
        void troubled(Throwable cause);

        /** jetcd stopped keeping {@code leaseId} alive, or etcd no longer knows it. */
        void lost(long leaseId);
    }

    private final Lease leases;
    private final Duration ttl;
    private final Duration callTimeout;
    private final Events events;
    private volatile long id;
    private volatile boolean dropped;
    private volatile long liveUntilNanos;
    private CloseableClient keepAlive;

    EtcdLease(Lease leases, Duration ttl, Duration callTimeout, Events events) {
        this.leases = leases;
        this.ttl = ttl;
        this.callTimeout = callTimeout;
        this.events = events;
    }

    /** The lease to write under: the current one while jetcd keeps it alive, else a new one. */
    long ensure() throws EtcdCallException {
        if (id != 0 && !dropped) {
            return id;
        }
        abandon();
        long seconds = Math.max(1, (ttl.toMillis() + 999) / 1000);
        LeaseGrantResponse granted = EtcdClients.await(leases.grant(seconds), callTimeout);
        id = granted.getID();
        dropped = false;
        liveUntilNanos = System.nanoTime() + TimeUnit.SECONDS.toNanos(granted.getTTL());
        keepAlive = leases.keepAlive(id, new KeepAliveObserver(id));
        return id;
    }

    long id() {
        return id;
    }

    /** Whether etcd answered a keep-alive (or the grant) of the current lease less than a TTL ago. */
    boolean live() {
        return id != 0 && !dropped && liveUntilNanos - System.nanoTime() > 0;
    }

    boolean held() {
        return id != 0;
    }

    /** After {@link Events#lost}: the next {@link #ensure} grants a new lease. */
    void drop(long leaseId) {
        if (leaseId == id) {
            dropped = true;
        }
    }

    /** Stops keeping the lease alive without revoking it: etcd expires it (and its record) after the TTL. */
    void abandon() {
        if (keepAlive != null) {
            keepAlive.close();
            keepAlive = null;
        }
        id = 0;
    }

    /** Stops keeping the lease alive and revokes it, which deletes its record at once; best effort. */
    void revoke(Duration timeout) throws EtcdCallException {
        long leaseId = id;
        abandon();
        if (leaseId != 0) {
            EtcdClients.await(leases.revoke(leaseId), timeout);
        }
    }

    private final class KeepAliveObserver implements StreamObserver<LeaseKeepAliveResponse> {
        private final long leaseId;

        KeepAliveObserver(long leaseId) {
            this.leaseId = leaseId;
        }

        @Override
        public void onNext(LeaseKeepAliveResponse answer) {
            if (answer.getID() == id && answer.getTTL() > 0) {
                liveUntilNanos = System.nanoTime() + TimeUnit.SECONDS.toNanos(answer.getTTL());
            }
        }

        @Override
        public void onError(Throwable t) {
            // jetcd reports every failure of its shared stream here and restarts the stream itself; only
            // "not found" means this lease is over.
            if (EtcdClients.leaseNotFound(t)) {
                events.lost(leaseId);
            } else {
                events.troubled(t);
            }
        }

        @Override
        public void onCompleted() {
            events.lost(leaseId);
        }
    }
}
