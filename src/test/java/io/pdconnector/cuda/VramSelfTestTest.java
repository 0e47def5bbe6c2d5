package io.pdconnector.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.transfer.DeviceMemory;
import io.pdconnector.transfer.DeviceRegion;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.loopback.LoopbackTransferEngine;
import java.io.IOException;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The start-up check, cause by cause: each fails with its one sentence, and leaves nothing held. */
class VramSelfTestTest {

    private static final long POOL = 16 << 20;

    @TempDir
    Path modules;
    private final FakeCuda cuda = new FakeCuda().withGpus(2);
    private final FakeNixl nixl = new FakeNixl(cuda);
    private final AtomicBoolean agentClosed = new AtomicBoolean();

    @BeforeEach
    void ucxModule() throws IOException {
        Files.createFile(modules.resolve("libuct_cuda.so.0"));
    }

    /** A TransferAgent that also registers VRAM through {@link #nixl}, and notes its close. */
    private TransferAgent nixlAgent() {
        return (TransferAgent) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {TransferAgent.class, DeviceMemory.class}, (p, m, args) -> switch (m.getName()) {
                    case "registerVram" -> nixl.registerVram((String) args[0], (long) args[1], (long) args[2], (int) args[3]);
                    case "deregisterVram" -> {
                        nixl.deregisterVram((DeviceRegion) args[0]);
                        yield null;
                    }
                    case "close" -> {
                        agentClosed.set(true);
                        yield null;
                    }
                    case "openHandles" -> nixl.registered.size();
                    default -> throw new UnsupportedOperationException(m.getName());
                });
    }

    private VramSelfTest.Inputs inputs(Supplier<CudaDriver> driver, String... uuids) {
        return new VramSelfTest.Inputs(driver, () -> List.of(uuids).stream().map(GpuSelector::parse).toList(), POOL,
                Map.of(), modules, this::nixlAgent);
    }

    private CudaDriver driver() {
        CudaDriver d = new CudaDriver(cuda);
        d.init();
        return d;
    }

    @Test
    void everyStepPassesAndEveryPoolIsGoneAfterWhileTheContextsStayRetainedUntilTheHoldIsClosed() {
        VramSelfTest.Passed result = VramSelfTest.run(inputs(this::driver, FakeCuda.uuid(2).toString(),
                FakeCuda.uuid(1).toString()));
        List<String> passed = result.lines();
        assertEquals("CUDA driver 12.4", passed.getFirst());
        assertTrue(passed.get(1).startsWith("rank 0: " + FakeCuda.uuid(2)), passed.get(1));
        assertTrue(passed.stream().anyMatch(l -> l.startsWith("UCX: cuda_ipc allowed")), passed.toString());
        assertTrue(passed.getLast().endsWith("allocated, registered as VRAM, IPC handle exported, deregistered, freed"),
                passed.getLast());
        assertEquals(6, passed.size(), passed.toString());
        assertEquals(0, cuda.allocated());
        assertTrue(nixl.registered.isEmpty());
        // the service's pools retain the contexts next: released now, the last retain would destroy each
        // context and the first pool would make it again
        assertEquals(Map.of(100, 1, 101, 1), cuda.retains, "each GPU's context still retained once");
        assertTrue(agentClosed.get());
        result.hold().close();
        assertEquals(Map.of(100, 0, 101, 0), cuda.retains, "the hold is the one release path");
        result.hold().close();
        assertEquals(Map.of(100, 0, 101, 0), cuda.retains, "and releases once");
    }

    @Test
    void noLibcudaFailsWithTheSentenceNamingTheLibraryAndTheSetting() {
        VramStartupException e = assertThrows(VramStartupException.class, () -> VramSelfTest.run(inputs(
                () -> { throw new CudaUnavailableException(CudaLoader.noDriver("cannot open libcuda.so.1")); },
                FakeCuda.uuid(1).toString())));
        assertTrue(e.getMessage().startsWith("pd.kv.memory=vram needs the CUDA driver library libcuda.so.1, which this "
                + "host does not have"), e.getMessage());
        assertTrue(e.getMessage().endsWith("or set pd.kv.memory=dram"), e.getMessage());
    }

    @Test
    void aDriverThatSeesNoGpuFailsWithTheCudaError() {
        cuda.failNext("cuInit", 100);
        VramStartupException e = assertThrows(VramStartupException.class,
                () -> VramSelfTest.run(inputs(this::driver, FakeCuda.uuid(1).toString())));
        assertTrue(e.getMessage().contains("cuInit(0) failed: CUDA_ERROR_NO_DEVICE (100)"), e.getMessage());
    }

    @Test
    void anUnknownUuidFailsNamingItAndTheVisibleOnesAndReleasesTheRanksBefore() {
        VramStartupException e = assertThrows(VramStartupException.class, () -> VramSelfTest.run(inputs(this::driver,
                FakeCuda.uuid(1).toString(), "GPU-deadbeef-0000-4000-8000-000000000000")));
        assertTrue(e.getMessage().startsWith("pd.kv.memory=vram: no GPU with UUID GPU-deadbeef-0000-4000-8000-000000000000"),
                e.getMessage());
        assertEquals(0, cuda.retains.get(100), "rank 0's context, retained before rank 1 failed, is released");
        assertFalse(agentClosed.get(), "no NIXL agent was made for a configuration that cannot run");
    }

    @Test
    void ucxWithoutAGpuTransportFailsBeforeNixlIsAsked() {
        VramStartupException e = assertThrows(VramStartupException.class, () -> VramSelfTest.run(
                new VramSelfTest.Inputs(this::driver, () -> List.of(GpuSelector.parse(FakeCuda.uuid(1).toString())), POOL,
                        Map.of("UCX_TLS", "tcp,self"), modules, this::nixlAgent)));
        assertTrue(e.getMessage().startsWith("pd.kv.memory=vram: UCX offers no GPU transport: UCX_TLS=tcp,self"),
                e.getMessage());
        assertFalse(agentClosed.get());
        assertEquals(0, cuda.retains.get(100));
    }

    @Test
    void nixlRefusingVramFailsWithItsErrorAndFreesTheProbe() {
        nixl.refuseRegister = -2;
        VramStartupException e = assertThrows(VramStartupException.class,
                () -> VramSelfTest.run(inputs(this::driver, FakeCuda.uuid(1).toString())));
        assertTrue(e.getMessage().startsWith("pd.kv.memory=vram: NIXL refused to register 16777216 bytes on GPU "
                + FakeCuda.uuid(1) + " as VRAM (pdx_region_register_vram(vram-selftest-r0) failed: BACKEND (-2))"),
                e.getMessage());
        assertEquals(0, cuda.allocated());
        assertTrue(agentClosed.get());
        assertEquals(0, cuda.retains.get(100));
    }

    @Test
    void aPoolThatDoesNotFitSaysHowBigItIs() {
        VramStartupException e = assertThrows(VramStartupException.class, () -> VramSelfTest.run(
                new VramSelfTest.Inputs(this::driver, () -> List.of(GpuSelector.parse(FakeCuda.uuid(1).toString())),
                        4L << 30, Map.of(), modules, this::nixlAgent)));
        assertTrue(e.getMessage().startsWith("pd.kv.memory=vram: GPU " + FakeCuda.uuid(1) + " has no 4294967296 bytes "
                + "free for rank 0's KV pool"), e.getMessage());
    }

    @Test
    void anAgentThatCannotRegisterVramIsRefusedNotReplacedByDram() {
        try (LoopbackTransferEngine loopback = new LoopbackTransferEngine()) {
            VramStartupException e = assertThrows(VramStartupException.class, () -> VramSelfTest.run(
                    new VramSelfTest.Inputs(this::driver, () -> List.of(GpuSelector.parse("sole-visible")), POOL, Map.of(),
                            modules, () -> loopback.createAgent("probe"))));
            assertTrue(e.getMessage().contains("sees 2 GPUs"), "sole-visible with two GPUs: " + e.getMessage());
        }
        FakeCuda one = new FakeCuda().withGpus(1);
        try (LoopbackTransferEngine loopback = new LoopbackTransferEngine()) {
            VramStartupException e = assertThrows(VramStartupException.class, () -> VramSelfTest.run(
                    new VramSelfTest.Inputs(() -> new CudaDriver(one), () -> List.of(GpuSelector.parse("sole-visible")),
                            POOL, Map.of(), modules, () -> loopback.createAgent("probe"))));
            assertTrue(e.getMessage().contains("cannot register VRAM"), e.getMessage());
        }
        assertEquals(0, one.retains.get(100));
    }
}
