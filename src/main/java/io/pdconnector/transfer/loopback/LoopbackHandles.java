package io.pdconnector.transfer.loopback;

import io.pdconnector.transfer.PreparedDescriptors;
import io.pdconnector.transfer.ReadRequest;
import io.pdconnector.transfer.RegisteredRegion;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Every handle one loopback agent has handed out and not yet taken back; a handle not in here (released
 * twice, or another agent's) is refused. Regions are a concurrent set because a peer's READ looks them
 * up through {@link #regionOf} from the peer's own thread.
 */
final class LoopbackHandles {

    private final String agentName;
    private final Set<LoopbackRegion> regions = ConcurrentHashMap.newKeySet();
    private final Set<LoopbackDescriptors> prepared = identitySet();
    private final Set<LoopbackRead> reads = identitySet();

    LoopbackHandles(String agentName) {
        this.agentName = agentName;
    }

    void add(LoopbackRegion region) {
        regions.add(region);
    }

    LoopbackRegion takeRegion(RegisteredRegion region) {
        if (!(region instanceof LoopbackRegion r) || !regions.remove(r)) {
            throw new IllegalArgumentException("this region is not held by agent " + agentName);
        }
        return r;
    }

    /** The live region holding [address, address + length), or null. */
    LoopbackRegion regionOf(long address, long length) {
        for (LoopbackRegion r : regions) {
            if (r.contains(address, length)) {
                return r;
            }
        }
        return null;
    }

    void add(LoopbackDescriptors descriptors) {
        prepared.add(descriptors);
    }

    void requirePrepared(PreparedDescriptors local, PreparedDescriptors remote) {
        if (!prepared.contains(local) || !prepared.contains(remote)) {
            throw new IllegalArgumentException("descriptor lists must be prepared by agent " + agentName);
        }
    }

    void takeDescriptors(PreparedDescriptors descriptors) {
        if (!prepared.remove(descriptors)) {
            throw new IllegalArgumentException("this descriptor list is not held by agent " + agentName);
        }
    }

    void add(LoopbackRead read) {
        reads.add(read);
    }

    LoopbackRead read(ReadRequest request) {
        if (!(request instanceof LoopbackRead read) || !reads.contains(read)) {
            throw new IllegalArgumentException("this READ is not held by agent " + agentName);
        }
        return read;
    }

    void takeRead(ReadRequest request) {
        reads.remove(read(request));
    }

    int count() {
        return regions.size() + prepared.size() + reads.size();
    }

    private static <T> Set<T> identitySet() {
        return Collections.newSetFromMap(new IdentityHashMap<>());
    }
}
