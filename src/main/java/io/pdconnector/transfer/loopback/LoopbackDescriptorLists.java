package io.pdconnector.transfer.loopback;

import io.pdconnector.transfer.DescriptorList;
import io.pdconnector.transfer.MemoryType;
import io.pdconnector.transfer.NativeStatus;
import io.pdconnector.transfer.PreparedDescriptors;
import io.pdconnector.transfer.TransferException;

/** One loopback agent's prepared descriptor lists, of its own registered memory or a loaded peer's. */
final class LoopbackDescriptorLists {

    private final LoopbackHandles handles;

    LoopbackDescriptorLists(LoopbackHandles handles) {
        this.handles = handles;
    }

    /** {@code owner} is the agent whose memory the list describes: this one, or a loaded peer. */
    PreparedDescriptors prepare(LoopbackAgent owner, DescriptorList descriptors) {
        if (descriptors.count() == 0) {
            throw new IllegalArgumentException("an empty descriptor list cannot be prepared");
        }
        if (descriptors.memoryType() != MemoryType.DRAM) {
            throw new IllegalArgumentException("the loopback engine moves host memory only, not "
                    + descriptors.memoryType() + " descriptors");
        }
        for (int i = 0; i < descriptors.count(); i++) {
            if (owner.regionOf(descriptors.address(i), descriptors.length(i)) == null) {
                throw TransferException.of("prepare(" + owner.name() + ")", NativeStatus.NOT_FOUND.code(),
                        "descriptor " + i + " is outside every registered region");
            }
        }
        LoopbackDescriptors d = new LoopbackDescriptors(owner, descriptors);
        handles.add(d);
        return d;
    }

    void release(PreparedDescriptors descriptors) {
        handles.takeDescriptors(descriptors);
    }
}
