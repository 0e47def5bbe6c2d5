package io.pdconnector.consumer;

import io.pdconnector.transfer.ReadRequest;
import io.pdconnector.transfer.TransferException;
import io.pdconnector.transfer.TransferStatus;

/** One posted block READ of a pull: one source rank into one decode rank. Released once, when terminal. */
final class BlockRead {

    private final SliceChannel channel;
    private final PullObserver observer;
    private final long postedAt;
    private final long postNanos;
    private ReadRequest request;
    private boolean failed;

    private BlockRead(SliceChannel channel, PullObserver observer, ReadRequest request, boolean failed,
            long postedAt, long postNanos) {
        this.channel = channel;
        this.observer = observer;
        this.request = request;
        this.failed = failed;
        this.postedAt = postedAt;
        this.postNanos = postNanos;
    }

    /** Posts without a notification (L6: P hears from D only after the slot check). */
    static BlockRead post(SliceChannel channel, int[] localBlocks, int[] remoteBlocks, PullObserver observer) {
        long start = System.nanoTime();
        try {
            ReadRequest r = channel.rank().agent().postRead(channel.local(), channel.indices(localBlocks),
                    channel.remote(), channel.indices(remoteBlocks), null);
            return new BlockRead(channel, observer, r, false, start, System.nanoTime() - start);
        } catch (TransferException e) {
            observer.blockReadFailed();
            return new BlockRead(channel, observer, null, true, start, System.nanoTime() - start);
        }
    }

    /** Polls once; true when terminal (done or failed), and then the READ is already released. */
    boolean poll() {
        if (request == null) {
            return true;
        }
        try {
            if (channel.rank().agent().status(request) == TransferStatus.IN_PROGRESS) {
                return false;
            }
            observer.blockReadDone(request.bytes(), request.descriptorCount(), postNanos, System.nanoTime() - postedAt);
        } catch (TransferException e) {
            failed = true;
            observer.blockReadFailed();
        }
        release();
        return true;
    }

    boolean terminal() {
        return request == null;
    }

    boolean failed() {
        return failed;
    }

    /** Releases (cancelling, if still in flight) the READ; idempotent. */
    void release() {
        if (request != null) {
            channel.rank().agent().release(request);
            request = null;
        }
    }
}
