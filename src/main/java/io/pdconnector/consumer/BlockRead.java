package io.pdconnector.consumer;

import io.pdconnector.transfer.ReadRequest;
import io.pdconnector.transfer.TransferException;
import io.pdconnector.transfer.TransferStatus;

/** One posted block READ of a pull: one source rank into one decode rank. Released once, when terminal. */
final class BlockRead {

    private final SliceChannel channel;
    private ReadRequest request;
    private boolean failed;

    private BlockRead(SliceChannel channel, ReadRequest request, boolean failed) {
        this.channel = channel;
        this.request = request;
        this.failed = failed;
    }

    /** Posts without a notification (L6: P hears from D only after the slot check). */
    static BlockRead post(SliceChannel channel, int[] localBlocks, int[] remoteBlocks) {
        try {
            ReadRequest r = channel.rank().agent().postRead(channel.local(), channel.indices(localBlocks),
                    channel.remote(), channel.indices(remoteBlocks), null);
            return new BlockRead(channel, r, false);
        } catch (TransferException e) {
            return new BlockRead(channel, null, true);
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
        } catch (TransferException e) {
            failed = true;
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
