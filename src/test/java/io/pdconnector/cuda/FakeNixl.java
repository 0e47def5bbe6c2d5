package io.pdconnector.cuda;

import io.pdconnector.transfer.DeviceMemory;
import io.pdconnector.transfer.DeviceRegion;
import io.pdconnector.transfer.TransferException;
import java.util.List;

/** NIXL's VRAM registration in Java: logs into the driver's call log, so one list shows the whole order. */
final class FakeNixl implements DeviceMemory {

    record Region(String label, long address, long length, int deviceOrdinal) implements DeviceRegion {
    }

    private final List<String> log;
    final java.util.Set<DeviceRegion> registered = new java.util.HashSet<>();
    Integer refuseRegister;
    int refuseDeregister;

    FakeNixl(FakeCuda cuda) {
        this.log = cuda.calls;
    }

    @Override
    public DeviceRegion registerVram(String label, long address, long bytes, int deviceOrdinal) {
        log.add("nixl.registerVram");
        if (refuseRegister != null) {
            throw TransferException.of("pdx_region_register_vram(" + label + ")", refuseRegister);
        }
        Region r = new Region(label, address, bytes, deviceOrdinal);
        registered.add(r);
        return r;
    }

    @Override
    public void deregisterVram(DeviceRegion region) {
        log.add("nixl.deregisterVram");
        if (refuseDeregister > 0) {
            refuseDeregister--;
            throw TransferException.of("pdx_region_deregister(" + region.label() + ")", -3);
        }
        if (!registered.remove(region)) {
            throw new IllegalArgumentException("not registered");
        }
    }
}
