package io.pdconnector.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.transfer.TransferException;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The pool's one lifecycle over a fake driver and a fake NIXL: allocate, zero, register as VRAM, export;
 * deregister, free; each failure undone in reverse; a refused deregistration keeps the memory and the GPU.
 */
class VramPoolTest {

    private static final long MIB = 1 << 20;
    private final FakeCuda cuda = new FakeCuda().withGpus(2);
    private final CudaDriver driver = new CudaDriver(cuda);
    private final FakeNixl nixl = new FakeNixl(cuda);

    private CudaDevice gpu2() {
        return CudaDevice.open(driver, new GpuSelector.ByUuid(FakeCuda.uuid(2)));
    }

    @Test
    void aPoolLivesInOneOrderAndEndsInTheReverseOne() {
        CudaDevice device = gpu2();
        assertEquals(1, device.ordinal(), "found by UUID: the second GPU");
        cuda.calls.clear();
        VramPool pool = VramPool.create(device, nixl, "kv-r0", 64 * MIB);
        assertEquals(List.of("cuCtxSetCurrent", "cuMemAlloc_v2", "cuMemsetD8_v2", "cuCtxSynchronize",
                "nixl.registerVram", "cuIpcGetMemHandle"), cuda.calls);
        assertEquals(64 * MIB, cuda.allocated());
        assertEquals(1, nixl.registered.size());
        assertEquals(1, nixl.registered.iterator().next().deviceOrdinal(), "NIXL's devId is the ordinal here");
        assertEquals(64, pool.ipcHandle().length);
        assertEquals(FakeCuda.uuid(2), pool.gpu());

        cuda.calls.clear();
        pool.close();
        assertEquals(List.of("cuCtxSetCurrent", "nixl.deregisterVram", "cuMemFree_v2"), cuda.calls);
        assertEquals(0, cuda.allocated());
        assertTrue(nixl.registered.isEmpty());
        assertFalse(pool.isOpen());
        assertThrows(IllegalStateException.class, pool::ipcHandle, "a closed pool has no handle to share");

        cuda.calls.clear();
        pool.close();
        assertEquals(List.of(), cuda.calls, "close is idempotent: nothing is released twice");
        device.close();
        assertEquals(0, cuda.retains.get(101), "the primary context retained once, released once");
    }

    @Test
    void aRefusedRegistrationFreesTheMemoryAndThrowsNixlsTypedError() {
        CudaDevice device = gpu2();
        nixl.refuseRegister = -2;
        cuda.calls.clear();
        TransferException e = assertThrows(TransferException.BackendFailure.class,
                () -> VramPool.create(device, nixl, "kv-r0", 8 * MIB));
        assertTrue(e.getMessage().startsWith("pdx_region_register_vram(kv-r0) failed: BACKEND"), e.getMessage());
        assertEquals(List.of("cuCtxSetCurrent", "cuMemAlloc_v2", "cuMemsetD8_v2", "cuCtxSynchronize",
                "nixl.registerVram", "cuCtxSetCurrent", "cuMemFree_v2"), cuda.calls);
        assertEquals(0, cuda.allocated());
        assertEquals(0, device.openPools());
        device.close();
    }

    @Test
    void aFailedExportDeregistersThenFrees() {
        CudaDevice device = gpu2();
        cuda.failNext("cuIpcGetMemHandle", 801);
        cuda.calls.clear();
        CudaException e = assertThrows(CudaException.NotSupported.class, () -> VramPool.create(device, nixl, "kv", MIB));
        assertTrue(e.getMessage().contains("CUDA_ERROR_NOT_SUPPORTED (801)"), e.getMessage());
        assertEquals(List.of("cuCtxSetCurrent", "cuMemAlloc_v2", "cuMemsetD8_v2", "cuCtxSynchronize",
                "nixl.registerVram", "cuIpcGetMemHandle", "cuCtxSetCurrent", "nixl.deregisterVram", "cuMemFree_v2"),
                cuda.calls);
        assertTrue(nixl.registered.isEmpty());
        assertEquals(0, cuda.allocated());
        device.close();
    }

    @Test
    void aFailedAllocationHoldsNothing() {
        CudaDevice device = gpu2();
        CudaException e = assertThrows(CudaException.OutOfMemory.class,
                () -> VramPool.create(device, nixl, "kv", 2L << 30));
        assertTrue(e.getMessage().contains("cuMemAlloc_v2(2147483648 bytes)"), e.getMessage());
        assertEquals(0, device.openPools());
        assertTrue(nixl.registered.isEmpty());
        device.close();
    }

    @Test
    void aRefusedDeregistrationKeepsTheMemoryAndTheGpuUntilACloseSucceeds() {
        CudaDevice device = gpu2();
        VramPool pool = VramPool.create(device, nixl, "kv", 4 * MIB);
        nixl.refuseDeregister = 1;
        assertThrows(TransferException.InvalidState.class, pool::close);
        assertEquals(4 * MIB, cuda.allocated(), "never freed while NIXL may still serve it");
        assertTrue(pool.isOpen());
        IllegalStateException held = assertThrows(IllegalStateException.class, device::close);
        assertTrue(held.getMessage().contains("still holds 1 VRAM pools"), held.getMessage());
        assertEquals(1, cuda.retains.get(101), "the context (and so the memory) stays");

        pool.close();
        assertEquals(0, cuda.allocated());
        device.close();
        assertEquals(0, cuda.retains.get(101));
    }

    @Test
    void aFailedFreeIsRetriedWithoutDeregisteringTwice() {
        CudaDevice device = gpu2();
        VramPool pool = VramPool.create(device, nixl, "kv", MIB);
        cuda.failNext("cuMemFree_v2", 700);
        assertThrows(CudaException.DriverFailure.class, pool::close);
        assertTrue(nixl.registered.isEmpty());
        cuda.calls.clear();
        pool.close();
        assertEquals(List.of("cuCtxSetCurrent", "cuMemFree_v2"), cuda.calls);
        assertEquals(0, device.openPools());
        device.close();
    }

    @Test
    void badArgumentsAreRefusedBeforeAnyAllocation() {
        CudaDevice device = gpu2();
        cuda.calls.clear();
        assertThrows(IllegalArgumentException.class, () -> VramPool.create(device, nixl, "kv", 0));
        assertThrows(IllegalArgumentException.class, () -> VramPool.create(device, nixl, " ", MIB));
        assertThrows(NullPointerException.class, () -> VramPool.create(device, null, "kv", MIB));
        assertEquals(List.of(), cuda.calls);
        device.close();
        assertThrows(IllegalStateException.class, () -> VramPool.create(device, nixl, "kv", MIB), "a closed GPU");
    }

    @Test
    void theGpuIsChosenByUuidOrAsTheSoleVisibleOneNeverByOrdinal() {
        GpuNotFoundException none = assertThrows(GpuNotFoundException.class, () -> CudaDevice.open(driver,
                GpuSelector.parse("GPU-deadbeef-0000-4000-8000-000000000000")));
        assertTrue(none.getMessage().startsWith("pd.kv.memory=vram: no GPU with UUID GPU-deadbeef-0000-4000-8000-000000000000 "
                + "among the 2 this process sees (GPU-00000001-"), none.getMessage());
        GpuNotFoundException two = assertThrows(GpuNotFoundException.class,
                () -> CudaDevice.open(driver, GpuSelector.parse("sole-visible")));
        assertTrue(two.getMessage().contains("sees 2 GPUs"), two.getMessage());

        FakeCuda one = new FakeCuda().withGpus(1);
        try (CudaDevice sole = CudaDevice.open(new CudaDriver(one), GpuSelector.parse("sole-visible"))) {
            assertEquals(FakeCuda.uuid(1), sole.uuid());
        }
        assertEquals(0, one.retains.get(100));
    }
}
