package io.pdconnector.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** The checked driver over a fake binding: argument checks before any downcall, statuses to typed exceptions. */
class CudaDriverTest {

    private final FakeCuda cuda = new FakeCuda().withGpus(2);
    private final CudaDriver driver = new CudaDriver(cuda);

    @Test
    void everyBadArgumentIsRefusedInJavaBeforeItsDowncall() {
        Map<String, Executable> bad = Map.of(
                "ordinal", () -> driver.device(-1),
                "device", () -> driver.uuid(-1),
                "name", () -> driver.name(-2),
                "retain", () -> driver.retainPrimaryContext(-1),
                "null context", () -> driver.setCurrent(0),
                "zero size", () -> driver.alloc(0),
                "negative size", () -> driver.alloc(-4096),
                "null free", () -> driver.free(0),
                "null memset", () -> driver.memset(0, 0, 16),
                "ipc of null", () -> driver.ipcHandle(0));
        bad.forEach((what, call) -> assertThrows(IllegalArgumentException.class, call, what));
        assertThrows(IllegalArgumentException.class, () -> driver.memset(0x1000, 256, 16));
        assertThrows(IllegalArgumentException.class, () -> driver.memset(0x1000, -1, 16));
        assertThrows(IllegalArgumentException.class, () -> driver.memset(0x1000, 0, 0));
        assertEquals(List.of(), cuda.calls, "no argument reached the driver");
    }

    @Test
    void eachErrorStatusBecomesItsTypedExceptionNamedAsCudaHNamesIt() {
        record Case(int status, String name, Class<? extends CudaException> type) {
        }
        List<Case> cases = List.of(
                new Case(1, "CUDA_ERROR_INVALID_VALUE", CudaException.InvalidValue.class),
                new Case(2, "CUDA_ERROR_OUT_OF_MEMORY", CudaException.OutOfMemory.class),
                new Case(3, "CUDA_ERROR_NOT_INITIALIZED", CudaException.NotInitialized.class),
                new Case(34, "CUDA_ERROR_STUB_LIBRARY", CudaException.DriverMismatch.class),
                new Case(35, "CUDA_ERROR_INSUFFICIENT_DRIVER", CudaException.DriverMismatch.class),
                new Case(100, "CUDA_ERROR_NO_DEVICE", CudaException.NoDevice.class),
                new Case(101, "CUDA_ERROR_INVALID_DEVICE", CudaException.NoDevice.class),
                new Case(201, "CUDA_ERROR_INVALID_CONTEXT", CudaException.InvalidContext.class),
                new Case(208, "CUDA_ERROR_ALREADY_MAPPED", CudaException.MappingFailed.class),
                new Case(400, "CUDA_ERROR_INVALID_HANDLE", CudaException.InvalidHandle.class),
                new Case(801, "CUDA_ERROR_NOT_SUPPORTED", CudaException.NotSupported.class),
                new Case(999, "CUDA_ERROR_UNKNOWN", CudaException.DriverFailure.class),
                new Case(12345, "CUDA_ERROR_FROM_A_NEWER_DRIVER", CudaException.DriverFailure.class),
                new Case(54321, "CUresult 54321", CudaException.DriverFailure.class));
        driver.setCurrent(0xc0064L);
        for (Case c : cases) {
            cuda.failNext("cuMemAlloc_v2", c.status());
            CudaException e = assertThrows(CudaException.class, () -> driver.alloc(4096));
            assertInstanceOf(c.type(), e, c.name());
            assertEquals(c.status(), e.status());
            assertEquals(c.name(), e.errorName());
            assertEquals("cuMemAlloc_v2(4096 bytes) failed: " + c.name() + " (" + c.status() + ")", e.getMessage());
        }
        assertEquals(0, cuda.allocated(), "a failed allocation leaves nothing");
    }

    @Test
    void devicesAreReadByOrdinalButNamedByUuid() {
        List<VisibleGpu> gpus = CudaDevice.visible(driver);
        assertEquals(2, gpus.size());
        assertEquals(FakeCuda.uuid(2), gpus.get(1).uuid());
        assertEquals("Fake H200 #1", gpus.get(1).name());
        assertEquals(101, gpus.get(1).device(), "the CUdevice handle, not the ordinal, is what calls take");
    }

    @Test
    void theIpcHandleIsCopiedOutWhole() {
        driver.setCurrent(0xc0064L);
        long p = driver.alloc(1 << 20);
        byte[] handle = driver.ipcHandle(p);
        assertEquals(CudaDriver.IPC_HANDLE_BYTES, handle.length);
        byte[] again = driver.ipcHandle(p);
        assertArrayEquals(handle, again);
        handle[0] ^= 1;
        assertTrue(again[0] != handle[0], "the caller's copy, not a view of native memory");
    }

    @Test
    void gpuUuidsParseAsNvidiaSmiPrintsThemAndCompareByBytes() {
        GpuUuid a = GpuUuid.parse("GPU-1f2e3d4c-0000-4000-8000-00000000abcd");
        assertEquals("GPU-1f2e3d4c-0000-4000-8000-00000000abcd", a.toString());
        assertEquals(a, GpuUuid.parse("GPU-1F2E3D4C-0000-4000-8000-00000000ABCD"));
        assertEquals(a, GpuUuid.parse("MIG-1f2e3d4c-0000-4000-8000-00000000abcd"));
        for (String bad : new String[] {"0", "GPU-1f2e3d4c", "gpu-1f2e3d4c-0000-4000-8000-00000000abcd", "", null}) {
            assertThrows(IllegalArgumentException.class, () -> GpuUuid.parse(bad), String.valueOf(bad));
        }
        assertThrows(IllegalArgumentException.class, () -> new GpuUuid(new byte[15]));
    }
}
