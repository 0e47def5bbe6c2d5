package io.pdconnector.consumer;

import io.pdconnector.transfer.PreparedDescriptors;
import io.pdconnector.transfer.RegisteredRegion;
import java.lang.foreign.ValueLayout;

/**
 * How D reads one prefill rank's lease slots: every remote slot prepared once, and a landing area
 * for up to {@code capacity} slots per READ. At most one slot READ per channel is in flight.
 */
final class SlotChannel {

    private final int prefillRank;
    private final ConsumerRank reader;
    private final PreparedDescriptors remote;
    private final RegisteredRegion landing;
    private final PreparedDescriptors local;
    private final int capacity;
    private SlotRead inFlight;

    SlotChannel(int prefillRank, ConsumerRank reader, PreparedDescriptors remote, RegisteredRegion landing,
            PreparedDescriptors local, int capacity) {
        this.prefillRank = prefillRank;
        this.reader = reader;
        this.remote = remote;
        this.landing = landing;
        this.local = local;
        this.capacity = capacity;
    }

    int prefillRank() {
        return prefillRank;
    }

    ConsumerRank reader() {
        return reader;
    }

    PreparedDescriptors remote() {
        return remote;
    }

    PreparedDescriptors local() {
        return local;
    }

    int capacity() {
        return capacity;
    }

    SlotRead inFlight() {
        return inFlight;
    }

    void inFlight(SlotRead read) {
        this.inFlight = read;
    }

    long landed(int index) {
        return landing.segment().getAtIndex(ValueLayout.JAVA_LONG, index);
    }

    /** Zeroed before each READ so a value left from an earlier READ can never pass for a fresh one. */
    void clearLanding(int count) {
        landing.segment().asSlice(0, (long) count * Long.BYTES).fill((byte) 0);
    }

    /** Releases the lists and the landing region; an in-flight READ is released (cancelled) first. */
    void release() {
        if (inFlight != null) {
            reader.agent().release(inFlight.request());
            inFlight = null;
        }
        reader.agent().release(remote);
        reader.agent().release(local);
        reader.agent().deregister(landing);
    }
}
