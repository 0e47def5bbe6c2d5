package io.pdconnector.transfer.loopback;

import io.pdconnector.transfer.NativeStatus;
import io.pdconnector.transfer.ReadRequest;
import io.pdconnector.transfer.TransferException;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/** A posted loopback READ: (local address, remote address, length) triples, copied on first poll. */
final class LoopbackRead implements ReadRequest {

    private final LoopbackAgent remote;
    private final long[] triples;
    private final byte[] notification;
    private boolean done;

    LoopbackRead(LoopbackAgent remote, long[] triples, byte[] notification) {
        this.remote = remote;
        this.triples = triples;
        this.notification = notification;
    }

    static long[] pairs(LoopbackDescriptors l, int[] li, LoopbackDescriptors r, int[] ri) {
        if (li.length == 0 || li.length != ri.length) {
            throw new IllegalArgumentException("a READ needs as many local as remote indices, and at least one");
        }
        long[] triples = new long[3 * li.length];
        for (int i = 0; i < li.length; i++) {
            long len = l.list().length(Objects.checkIndex(li[i], l.count()));
            if (len != r.list().length(Objects.checkIndex(ri[i], r.count()))) {
                throw new IllegalArgumentException("descriptor pair " + i + " has different lengths");
            }
            triples[3 * i] = l.list().address(li[i]);
            triples[3 * i + 1] = r.list().address(ri[i]);
            triples[3 * i + 2] = len;
        }
        return triples;
    }

    boolean done() {
        return done;
    }

    LoopbackAgent remote() {
        return remote;
    }

    /** Copies every descriptor, then notifies: the peer never sees the notification before the bytes. */
    void complete(LoopbackAgent local) {
        if (!remote.alive()) {
            throw TransferException.of("status(" + remote.name() + ")", NativeStatus.REMOTE_DISCONNECT.code(),
                    "the peer agent is gone");
        }
        for (int i = 0; i < triples.length; i += 3) {
            LoopbackRegion src = remote.regionOf(triples[i + 1], triples[i + 2]);
            LoopbackRegion dst = local.regionOf(triples[i], triples[i + 2]);
            if (src == null || dst == null) {
                throw TransferException.of("status(" + remote.name() + ")", NativeStatus.NOT_FOUND.code(),
                        "descriptor " + i / 3 + " is no longer registered");
            }
            MemorySegment.copy(src.segment(), triples[i + 1] - src.address(), dst.segment(),
                    triples[i] - dst.address(), triples[i + 2]);
        }
        done = true;
        if (notification != null) {
            remote.deliver(local.name(), notification);
        }
    }

    @Override
    public String remoteAgent() {
        return remote.name();
    }

    @Override
    public int descriptorCount() {
        return triples.length / 3;
    }

    @Override
    public long bytes() {
        long sum = 0;
        for (int i = 2; i < triples.length; i += 3) {
            sum += triples[i];
        }
        return sum;
    }
}
