package io.pdconnector.transfer.loopback;

import io.pdconnector.transfer.NativeStatus;
import io.pdconnector.transfer.PreparedDescriptors;
import io.pdconnector.transfer.ReadRequest;
import io.pdconnector.transfer.TransferException;
import io.pdconnector.transfer.TransferStatus;

/** One loopback agent's READs: posted, completed by copying on the first poll, released. */
final class LoopbackReads {

    private final LoopbackHandles handles;

    LoopbackReads(LoopbackHandles handles) {
        this.handles = handles;
    }

    /** {@code self} is the posting agent: the local list must be its own, the remote one a peer's. */
    ReadRequest post(LoopbackAgent self, PreparedDescriptors local, int[] localIndices, PreparedDescriptors remote,
            int[] remoteIndices, byte[] notification) {
        handles.requirePrepared(local, remote);
        LoopbackDescriptors l = (LoopbackDescriptors) local;
        LoopbackDescriptors r = (LoopbackDescriptors) remote;
        if (l.agent() != self || r.agent() == self) {
            throw new IllegalArgumentException("a READ goes from a remote list into a local one");
        }
        if (notification != null && notification.length == 0) {
            throw new IllegalArgumentException("a notification must not be empty");
        }
        TransferException.checkNotificationSize("postRead", notification);
        LoopbackRead read = new LoopbackRead(r.agent(), LoopbackRead.pairs(l, localIndices, r, remoteIndices),
                notification == null ? null : notification.clone());
        handles.add(read);
        return read;
    }

    /** As NIXL: a READ still in progress whose peer {@code self} has invalidated is not found. */
    TransferStatus status(LoopbackAgent self, LoopbackPeers peers, ReadRequest request) {
        LoopbackRead read = handles.read(request);
        if (!read.done()) {
            if (!peers.holds(read.remote())) {
                throw TransferException.of("status(" + read.remoteAgent() + ")", NativeStatus.NOT_FOUND.code(),
                        "the peer agent was invalidated during the READ");
            }
            read.complete(self);
        }
        return TransferStatus.DONE;
    }

    void release(ReadRequest request) {
        handles.takeRead(request);
    }
}
