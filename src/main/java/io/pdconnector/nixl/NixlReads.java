package io.pdconnector.nixl;

import static io.pdconnector.nixl.NativeChecks.check;

import io.pdconnector.transfer.PreparedDescriptors;
import io.pdconnector.transfer.ReadRequest;
import io.pdconnector.transfer.TransferException;
import io.pdconnector.transfer.TransferStatus;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * One agent's READs: posted from a peer's prepared list into its own, polled, released. Indices and
 * lengths are checked here so the helper never indexes past a list. Called only through {@link NixlAgent}.
 */
final class NixlReads {

    private final HelperBindings native_;
    private final MemorySegment agent;
    private final String name;
    private final NativeScratch scratch;
    private final NixlHandles handles;

    NixlReads(HelperBindings bindings, MemorySegment agent, String name, NativeScratch scratch, NixlHandles handles) {
        this.native_ = bindings;
        this.agent = agent;
        this.name = name;
        this.scratch = scratch;
        this.handles = handles;
    }

    ReadRequest post(PreparedDescriptors local, int[] localIndices, PreparedDescriptors remote,
            int[] remoteIndices, byte[] notification) {
        NixlDescriptors l = handles.descriptors(local, "local descriptor list");
        NixlDescriptors r = handles.descriptors(remote, "remote descriptor list");
        if (!l.owner().equals(name) || r.owner().equals(name)) {
            throw new IllegalArgumentException("a READ goes from a remote list into a local one");
        }
        long bytes = checkPairs(l, localIndices, r, remoteIndices);
        if (notification != null && notification.length == 0) {
            throw new IllegalArgumentException("a notification must not be empty");
        }
        TransferException.checkNotificationSize("postRead", notification);
        MemorySegment notif = notification == null ? MemorySegment.NULL : scratch.bytes(notification);
        long notifLen = notification == null ? 0 : notification.length;
        MemorySegment out = scratch.out();
        int rc = check("pdx_read_post", r.owner(), native_.readPost(agent, l.handle(),
                scratch.localIndices(localIndices), r.handle(), scratch.remoteIndices(remoteIndices),
                localIndices.length, notif, notifLen, out));
        NixlRead read = new NixlRead(r.owner(), localIndices.length, bytes, out.get(ValueLayout.ADDRESS, 0),
                rc == 0);
        handles.add(read);
        return read;
    }

    /** Checks indices and matching lengths in Java, and returns the READ's byte count. */
    private static long checkPairs(NixlDescriptors l, int[] li, NixlDescriptors r, int[] ri) {
        if (li.length == 0 || li.length != ri.length) {
            throw new IllegalArgumentException("a READ needs as many local as remote indices, and at least one; got "
                    + li.length + " and " + ri.length);
        }
        long bytes = 0;
        for (int i = 0; i < li.length; i++) {
            Objects.checkIndex(li[i], l.count());
            Objects.checkIndex(ri[i], r.count());
            if (l.lengths()[li[i]] != r.lengths()[ri[i]]) {
                throw new IllegalArgumentException("descriptor pair " + i + " has lengths " + l.lengths()[li[i]]
                        + " (local) and " + r.lengths()[ri[i]] + " (remote)");
            }
            bytes += l.lengths()[li[i]];
        }
        return bytes;
    }

    TransferStatus status(ReadRequest request) {
        NixlRead read = handles.read(request);
        if (read.done) {
            return TransferStatus.DONE;
        }
        int rc = check("pdx_xfer_status", read.remoteAgent(), native_.xferStatus(agent, read.handle));
        read.done = rc == 0;
        return read.done ? TransferStatus.DONE : TransferStatus.IN_PROGRESS;
    }

    /**
     * The handle is given up only once NIXL has let go of the READ: a refused release (its backend
     * cannot cancel it) throws and leaves the READ held, to be polled and released again.
     */
    void release(ReadRequest request) {
        NixlRead read = handles.read(request);
        check("pdx_xfer_release", read.remoteAgent(), native_.xferRelease(agent, read.handle));
        handles.takeRead(request);
    }
}
