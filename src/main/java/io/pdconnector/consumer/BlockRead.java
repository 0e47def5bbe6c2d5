package io.pdconnector.consumer;

import io.pdconnector.transfer.ReadRequest;
import io.pdconnector.transfer.TransferException;
import io.pdconnector.transfer.TransferStatus;

/**
 * One posted block READ of a pull: one source rank into one decode rank. Its handle is released once
 * NIXL reports the READ terminal, never before (L13): a cancel may report success while bytes still
 * land, or be refused; a release the engine refuses leaves the handle held, to be tried again.
 */
final class BlockRead {

    private final SliceChannel channel;
    private final PullObserver observer;
    private final long postedAt;
    private final long postNanos;
    private ReadRequest request;
    private boolean terminal;
    private boolean failed;

    private BlockRead(SliceChannel channel, PullObserver observer, ReadRequest request, long postedAt,
            long postNanos) {
        this.channel = channel;
        this.observer = observer;
        this.request = request;
        this.terminal = request == null;
        this.failed = request == null;
        this.postedAt = postedAt;
        this.postNanos = postNanos;
    }

    /**
     * Posts without a notification (L6: P hears from D only after the slot check), block {@code i} with its first
     * {@code segments[i]} KV cache group segments.
     */
    static BlockRead post(SliceChannel channel, int[] localBlocks, int[] remoteBlocks, int[] segments,
            PullObserver observer) {
        long start = System.nanoTime();
        try {
            ReadRequest r = channel.rank().agent().postRead(channel.local(), channel.indices(localBlocks, segments),
                    channel.remote(), channel.indices(remoteBlocks, segments), null);
            return new BlockRead(channel, observer, r, start, System.nanoTime() - start);
        } catch (TransferException e) {
            observer.blockReadFailed();
            return new BlockRead(channel, observer, null, start, System.nanoTime() - start);
        }
    }

    /**
     * Polls once; true when terminal (done, failed, or the peer's agent gone), and then its handle is
     * released, or kept for the next poll if the engine refuses.
     */
    boolean poll() {
        if (!terminal) {
            try {
                if (channel.rank().agent().status(request) == TransferStatus.IN_PROGRESS) {
                    return false;
                }
                observer.blockReadDone(request.bytes(), request.descriptorCount(), postNanos,
                        System.nanoTime() - postedAt);
            } catch (TransferException e) {
                failed = true;
                observer.blockReadFailed();
            }
            terminal = true;
        }
        releaseHandle();
        return true;
    }

    private void releaseHandle() {
        if (request == null) {
            return;
        }
        try {
            channel.rank().agent().release(request);
            request = null;
        } catch (TransferException e) {
            // kept: the next poll tries again; the handle is never dropped while NIXL may still hold it
        }
    }

    /** No byte of it can land any more: NIXL said so. */
    boolean terminal() {
        return terminal;
    }

    /** Its handle is still held (in flight, or its release was refused). */
    boolean held() {
        return request != null;
    }

    boolean failed() {
        return failed;
    }

    /**
     * Shutdown only: releases the handle even in flight (a cancel), since the memory it writes into
     * goes with the loop. False if the engine refused; the handle then stays held, and its agent
     * refuses to close, which says so.
     */
    boolean cancel() {
        if (request == null) {
            return true;
        }
        try {
            channel.rank().agent().release(request);
            request = null;
            return true;
        } catch (TransferException e) {
            return false;
        }
    }
}
