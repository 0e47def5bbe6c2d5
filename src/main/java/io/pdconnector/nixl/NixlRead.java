package io.pdconnector.nixl;

import io.pdconnector.transfer.ReadRequest;
import java.lang.foreign.MemorySegment;

final class NixlRead implements ReadRequest {

    private final String remoteAgent;
    private final int descriptorCount;
    private final long bytes;
    final MemorySegment handle;
    boolean done;

    NixlRead(String remoteAgent, int descriptorCount, long bytes, MemorySegment handle, boolean done) {
        this.remoteAgent = remoteAgent;
        this.descriptorCount = descriptorCount;
        this.bytes = bytes;
        this.handle = handle;
        this.done = done;
    }

    @Override
    public String remoteAgent() {
        return remoteAgent;
    }

    @Override
    public int descriptorCount() {
        return descriptorCount;
    }

    @Override
    public long bytes() {
        return bytes;
    }
}
