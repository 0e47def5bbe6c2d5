package io.pdconnector.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.transfer.DevicePool;
import io.pdconnector.transfer.PoolShare;
import io.pdconnector.transfer.TransferException;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The ranks' pools over a fake driver and a fake NIXL: rank r's pool on the GPU named for rank r (by UUID),
 * shared as UUID, size, 64-byte handle and a fresh incarnation; one release path (deregister, free, then the
 * context); a refused deregistration keeps memory and context until a later close succeeds; a pool that
 * cannot be made leaves no context retained.
 */
class RankPoolsTest {

    private static final long MIB = 1 << 20;
    private final FakeCuda cuda = new FakeCuda().withGpus(2);
    private final FakeNixl nixl = new FakeNixl(cuda);
    private int loads;
    private final RankPools pools = new RankPools(() -> {
        loads++;
        return new CudaDriver(cuda);
    }, List.of(new GpuSelector.ByUuid(FakeCuda.uuid(2)), new GpuSelector.ByUuid(FakeCuda.uuid(1))));

    @Test
    void eachRankGetsItsOwnGpusPoolAndEveryReleaseGoesInOneOrder() {
        DevicePool rank0 = pools.open(nixl, 0, "e-p0-kv", 8 * MIB);
        DevicePool rank1 = pools.open(nixl, 1, "e-p1-kv", 8 * MIB);
        assertEquals(1, loads, "the driver is loaded once");
        assertEquals(1, rank0.deviceOrdinal(), "rank 0 named the second GPU, found by UUID");
        assertEquals(0, rank1.deviceOrdinal());
        PoolShare s0 = rank0.share(0);
        PoolShare s1 = rank1.share(1);
        assertEquals(FakeCuda.uuid(2).toString(), s0.gpuUuid());
        assertEquals(8 * MIB, s0.bytes());
        assertEquals(PoolShare.IPC_HANDLE_BYTES, s0.ipcHandle().length);
        assertNotEquals(s0.incarnation(), s1.incarnation(), "every pool made has its own incarnation");
        assertTrue(s0.incarnation() > 0 && s0.incarnation() < (1L << 53));
        assertEquals(s0, rank0.share(0), "the share is stable while the pool lives");

        cuda.calls.clear();
        rank0.close();
        assertEquals(List.of("cuCtxSetCurrent", "nixl.deregisterVram", "cuMemFree_v2", "cuCtxSetCurrent",
                "cuDevicePrimaryCtxRelease_v2"), cuda.calls, "deregister, free, then the context");
        assertEquals(0, cuda.retains.get(101));
        rank1.close();
        assertEquals(0, cuda.retains.get(100));
        assertEquals(0, cuda.allocated());
        assertTrue(nixl.registered.isEmpty());
    }

    @Test
    void aRefusedDeregistrationKeepsMemoryAndContextUntilALaterCloseSucceeds() {
        DevicePool pool = pools.open(nixl, 0, "e-p0-kv", 8 * MIB);
        nixl.refuseDeregister = 1;
        assertThrows(TransferException.class, pool::close);
        assertEquals(8 * MIB, cuda.allocated(), "not freed: a peer could READ what the driver puts there next");
        assertEquals(1, cuda.retains.get(101), "the context stays: releasing it would free the memory");

        pool.close();
        assertEquals(0, cuda.allocated());
        assertEquals(0, cuda.retains.get(101));
        assertTrue(nixl.registered.isEmpty());
    }

    @Test
    void aPoolThatCannotBeMadeGivesTheContextBack() {
        nixl.refuseRegister = -2;
        assertThrows(TransferException.class, () -> pools.open(nixl, 0, "e-p0-kv", 8 * MIB));
        assertEquals(0, cuda.retains.get(101));
        assertEquals(0, cuda.allocated());

        nixl.refuseRegister = null;
        assertThrows(IllegalArgumentException.class, () -> pools.open(nixl, 2, "e-p2-kv", 8 * MIB),
                "a rank pd.kv.gpu-uuid does not name");
    }

    @Test
    void zeroingStaysInsideThePoolAndEndsWithTheDevicesWorkDone() {
        DevicePool pool = pools.open(nixl, 0, "e-p0-kv", 8 * MIB);
        cuda.calls.clear();
        pool.zero(MIB, 2 * MIB);
        assertEquals(List.of("cuCtxSetCurrent", "cuMemsetD8_v2", "cuCtxSynchronize"), cuda.calls);
        assertArrayEquals(new long[] {pool.address() + MIB, 2 * MIB}, cuda.lastMemset);
        cuda.calls.clear();
        assertThrows(IllegalArgumentException.class, () -> pool.zero(7 * MIB, 2 * MIB));
        assertThrows(IllegalArgumentException.class, () -> pool.zero(-1, MIB));
        assertEquals(List.of(), cuda.calls, "refused before any call");
        pool.close();
        assertThrows(IllegalStateException.class, () -> pool.zero(0, MIB), "a closed pool zeroes nothing");
    }

    @Test
    void aReservationsBlocksAreZeroedWithOneWaitAndAnyRangeOutsideRefusesThemAll() {
        DevicePool pool = pools.open(nixl, 0, "e-p0-kv", 8 * MIB);
        cuda.calls.clear();
        pool.zero(new long[] {0, 3 * MIB, 6 * MIB}, MIB);
        assertEquals(List.of("cuCtxSetCurrent", "cuMemsetD8_v2", "cuMemsetD8_v2", "cuMemsetD8_v2", "cuCtxSynchronize"),
                cuda.calls);
        assertArrayEquals(new long[] {pool.address() + 6 * MIB, MIB}, cuda.lastMemset);
        cuda.calls.clear();
        assertThrows(IllegalArgumentException.class, () -> pool.zero(new long[] {0, 7 * MIB + 1}, MIB));
        assertEquals(List.of(), cuda.calls, "refused before any call");
        pool.close();
    }
}
