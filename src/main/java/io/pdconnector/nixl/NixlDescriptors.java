package io.pdconnector.nixl;

import io.pdconnector.transfer.PreparedDescriptors;
import java.lang.foreign.MemorySegment;

record NixlDescriptors(String owner, int count, long[] lengths, MemorySegment handle)
        implements PreparedDescriptors {
}
