package io.pdconnector.controlplane;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.options.PutOption;
import io.pdconnector.controlplane.EtcdClients.EtcdCallException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.jboss.logging.Logger;

/**
 * This instance's record at {@code <prefix>instances/<engine-id>}: the one publish last asked for, the
 * one last written and under which lease, and the put and delete that bring etcd in line. Whether and
 * when to write is the store's decision (it knows whether etcd answers); this class only knows what
 * its record is. {@link #want} and {@link #status} are called on any thread; writes and deletes run on
 * the store's worker thread only, like every other etcd call.
 */
final class EtcdOwnRecord {

    private static final Logger LOG = Logger.getLogger(EtcdOwnRecord.class);

    /**
     * A supplier, not the client itself: jetcd builds its KV client on first use, and taking it here
     * would build it when the store is constructed rather than when it first writes.
     */
    private final Supplier<KV> kv;
    private final String instancesPrefix;
    private final RecordCodec codec;
    private final EtcdLease lease;
    private final Duration callTimeout;
    private final AtomicLong writes;
    /** What publish last asked for; null before it and after a withdraw. */
    private final AtomicReference<InstanceRecord> wanted = new AtomicReference<>();
    private volatile Written written;

    EtcdOwnRecord(Supplier<KV> kv, String instancesPrefix, RecordCodec codec, EtcdLease lease, Duration callTimeout,
            AtomicLong writes) {
        this.kv = kv;
        this.instancesPrefix = instancesPrefix;
        this.codec = codec;
        this.lease = lease;
        this.callTimeout = callTimeout;
        this.writes = writes;
    }

    /** What health says about the own record; the flag and the sentence come from one read of the state. */
    record Status(boolean published, String sentence) {
    }

    void want(InstanceRecord own) {
        wanted.set(own);
    }

    /** No record wanted any more, unless publish has since asked for another engine's. */
    void unwant(String engineId) {
        wanted.updateAndGet(r -> r != null && r.engineId().equals(engineId) ? null : r);
    }

    /** The record wanted, or null. */
    InstanceRecord wanted() {
        return wanted.get();
    }

    /** The record to write now, or null: none is wanted, or the wanted one is written under a live lease. */
    InstanceRecord due() {
        InstanceRecord own = wanted.get();
        Written w = written;
        return own == null || w != null && w.record() == own && lease.live() ? null : own;
    }

    Status status() {
        InstanceRecord own = wanted.get();
        Written w = written;
        boolean published = own != null && w != null && w.record() == own && w.leaseId() == lease.id()
                && lease.live();
        String sentence = own == null ? "no own record to publish"
                : published ? "own record of " + own.engineId() + " written under lease " + Long.toHexString(
                        lease.id()) : "own record of " + own.engineId() + " not written under a live lease";
        return new Status(published, sentence);
    }

    // ---- on the store's worker thread ----

    void write(InstanceRecord own) throws EtcdCallException {
        long leaseId = lease.ensure();
        try {
            put(own, leaseId);
        } catch (EtcdCallException e) {
            if (!EtcdClients.leaseNotFound(e)) {
                throw e;
            }
            // It expired before jetcd noticed (it checks once a second): a new one.
            lease.abandon();
            leaseId = lease.ensure();
            put(own, leaseId);
        }
        written = new Written(own, leaseId);
        writes.incrementAndGet();
    }

    /**
     * Deletes the record of {@code engineId}; with no record wanted any more, the lease goes too. Never
     * throws: a record that cannot be deleted goes when its lease expires.
     */
    void remove(String engineId) {
        long deadline = System.nanoTime() + callTimeout.toNanos();
        try {
            EtcdClients.await(kv.get().delete(key(engineId)), remaining(deadline));
            if (wanted.get() == null) {
                written = null;
                lease.revoke(remaining(deadline));
            }
        } catch (EtcdCallException e) {
            LOG.warnf("withdraw of %s from etcd failed (%s); its record goes when its lease expires", engineId,
                    e.getMessage());
            if (wanted.get() == null) {
                lease.abandon();
            }
        }
    }

    private void put(InstanceRecord own, long leaseId) throws EtcdCallException {
        // Writing the same record twice is harmless, so jetcd may retry it on another node.
        EtcdClients.await(kv.get().put(key(own.engineId()), ByteSequence.from(codec.encode(own)),
                PutOption.builder().withLeaseId(leaseId).withAutoRetry().build()), callTimeout);
    }

    private ByteSequence key(String engineId) {
        return EtcdClients.bytes(instancesPrefix + engineId);
    }

    /** The delete and the revoke after it share one call timeout; each is given at least 1 ms, so each is tried. */
    private static Duration remaining(long deadlineNanos) {
        return Duration.ofNanos(Math.max(1_000_000, deadlineNanos - System.nanoTime()));
    }

    /** The own record as last written, and the lease it was written under. */
    private record Written(InstanceRecord record, long leaseId) {
    }
}
