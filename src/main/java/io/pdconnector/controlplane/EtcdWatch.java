package io.pdconnector.controlplane;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdException;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import java.util.List;

/**
 * One watch of the instances prefix from a revision on. jetcd resumes a watch broken by a failed
 * member on another one from the last revision it delivered; a watch it ends instead (an error it
 * considers final) can be opened again from {@link #next}, unless etcd itself cancelled it (its
 * revision compacted, or ahead of an etcd that lost its data): then only reading the whole prefix
 * again is right. Everything is handed to {@link Events} tagged with this watch, so the store can
 * tell its current watch from one it already replaced.
 */
final class EtcdWatch implements Watch.Listener {

    /** Called on jetcd's threads. */
    interface Events {
        void changed(EtcdWatch watch, List<WatchEvent> events);

        /** A failure jetcd retries on its own, or one after which it ends the watch. */
        void troubled(EtcdWatch watch, Throwable cause);

        /** The watch is over and will not deliver again. */
        void ended(EtcdWatch watch);
    }

    private final Events events;
    private final boolean reopened;
    private volatile Watch.Watcher watcher;
    private volatile long next;
    private volatile boolean delivered;
    private volatile boolean cancelledByEtcd;

    private EtcdWatch(Events events, long fromRevision, boolean reopened) {
        this.events = events;
        this.next = fromRevision;
        this.reopened = reopened;
    }

    static EtcdWatch open(Watch watches, ByteSequence prefix, long fromRevision, Events events) {
        return open(watches, prefix, fromRevision, events, false);
    }

    /** A new watch taking over from {@code ended} where it stopped. */
    static EtcdWatch reopen(Watch watches, ByteSequence prefix, EtcdWatch ended) {
        return open(watches, prefix, ended.next, ended.events, true);
    }

    private static EtcdWatch open(Watch watches, ByteSequence prefix, long fromRevision, Events events,
            boolean reopened) {
        EtcdWatch w = new EtcdWatch(events, fromRevision, reopened);
        w.watcher = watches.watch(prefix, WatchOption.builder().isPrefix(true).withRevision(fromRevision).build(), w);
        return w;
    }

    /**
     * Whether taking over from where it stopped would be wrong or futile: etcd cancelled it, or it
     * was itself a take-over that ended before delivering anything.
     */
    boolean mustReadAgain() {
        return cancelledByEtcd || reopened && !delivered;
    }

    @Override
    public void onNext(WatchResponse response) {
        List<WatchEvent> changes = response.getEvents();
        if (!changes.isEmpty()) {
            delivered = true;
            next = changes.getLast().getKeyValue().getModRevision() + 1;
            events.changed(this, changes);
        }
    }

    @Override
    public void onError(Throwable cause) {
        // jetcd's words for etcd's cancel responses: compacted (OUT_OF_RANGE too), a future revision, or a reason.
        if (cause instanceof EtcdException e && (e.getErrorCode() == ErrorCode.OUT_OF_RANGE
                || e.getErrorCode() == ErrorCode.FAILED_PRECONDITION)) {
            cancelledByEtcd = true;
        }
        events.troubled(this, cause);
    }

    @Override
    public void onCompleted() {
        events.ended(this);
    }

    void close() {
        Watch.Watcher w = watcher;
        if (w != null) {
            w.close();
        }
    }
}
