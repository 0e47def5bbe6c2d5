package io.pdconnector.nixl;

import io.pdconnector.transfer.PreparedDescriptors;
import io.pdconnector.transfer.ReadRequest;
import io.pdconnector.transfer.RegisteredRegion;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Objects;
import java.util.Set;

/**
 * Every handle one agent has handed out and not yet taken back. A handle is accepted only if it is
 * in here, so a second release or another agent's handle is refused in Java instead of reaching
 * native code with a dangling pointer. The take methods remove a handle before its native release:
 * whatever that release reports, the handle is spent; a READ is the exception ({@link NixlReads#release}:
 * NIXL keeps a READ it cannot cancel, so its handle is taken only after the release succeeded).
 * Identity sets: two equal records are still two registrations.
 */
final class NixlHandles {

    private final Set<NixlRegion> regions = handleSet();
    private final Set<NixlDescriptors> prepared = handleSet();
    private final Set<NixlRead> reads = handleSet();

    void add(NixlRegion region) {
        regions.add(region);
    }

    void add(NixlDescriptors descriptors) {
        prepared.add(descriptors);
    }

    void add(NixlRead read) {
        reads.add(read);
    }

    NixlRegion takeRegion(RegisteredRegion region) {
        NixlRegion r = owned(regions, region, "region");
        regions.remove(r);
        return r;
    }

    NixlDescriptors descriptors(PreparedDescriptors descriptors, String what) {
        return owned(prepared, descriptors, what);
    }

    NixlDescriptors takeDescriptors(PreparedDescriptors descriptors) {
        NixlDescriptors d = owned(prepared, descriptors, "descriptor list");
        prepared.remove(d);
        return d;
    }

    NixlRead read(ReadRequest request) {
        return owned(reads, request, "READ");
    }

    NixlRead takeRead(ReadRequest request) {
        NixlRead read = owned(reads, request, "READ");
        reads.remove(read);
        return read;
    }

    int count() {
        return regions.size() + prepared.size() + reads.size();
    }

    /** What is still held, for the refusal to close. */
    String describe() {
        return regions.size() + " regions, " + prepared.size() + " descriptor lists and " + reads.size() + " READs";
    }

    private static <T> T owned(Set<T> handles, Object handle, String what) {
        Objects.requireNonNull(handle, what);
        if (!handles.contains(handle)) {
            throw new IllegalArgumentException("this " + what + " is not held by this agent (released twice, or another agent's)");
        }
        @SuppressWarnings("unchecked")
        T t = (T) handle;
        return t;
    }

    private static <T> Set<T> handleSet() {
        return Collections.newSetFromMap(new IdentityHashMap<>());
    }
}
