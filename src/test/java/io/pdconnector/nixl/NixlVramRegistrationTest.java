package io.pdconnector.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.transfer.DeviceMemory;
import io.pdconnector.transfer.DescriptorList;
import io.pdconnector.transfer.DeviceRegion;
import io.pdconnector.transfer.MemoryType;
import io.pdconnector.transfer.RegisteredRegion;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferException;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * VRAM registration through the helper on real NIXL, on a host without a GPU: what can be proven here is
 * the refusal path. NIXL's UCX checks that it sees device memory at the address (ucp_mem_query) and
 * refuses host memory registered as VRAM; that refusal must reach Java as NIXL's typed error and leave
 * the agent holding nothing. The accepted path needs a GPU (scripts/gpu-check.sh, docs/gpu.md).
 */
class NixlVramRegistrationTest {

    private NixlTransferEngine engine;
    private TransferAgent agent;

    @BeforeEach
    void open() {
        engine = NixlTransferEngine.open(NixlHome.at(Path.of(System.getProperty("pd.nixl.home"))), false,
                NixlDefaults.PROGRESS_DELAY_US);
        agent = engine.createAgent("vram-" + System.nanoTime());
    }

    @AfterEach
    void close() {
        agent.close();
        engine.close();
    }

    @Test
    void aNixlAgentRegistersVramAndHostMemoryAsVramIsRefusedWithNixlsError() {
        DeviceMemory vram = assertInstanceOf(DeviceMemory.class, agent, "real NIXL agents register VRAM");
        RegisteredRegion host = agent.allocate("host", 1 << 20);
        try {
            TransferException e = assertThrows(TransferException.class,
                    () -> vram.registerVram("not-vram", host.address(), host.length(), 0));
            assertInstanceOf(TransferException.BackendFailure.class, e, e.getMessage());
            assertEquals("pdx_region_register_vram(not-vram) failed: BACKEND (-2)", e.getMessage());
            assertEquals(1, agent.openHandles(), "only the host region: the refused registration left nothing");
        } finally {
            agent.deregister(host);
        }
        assertEquals(0, agent.openHandles());
    }

    @Test
    void aDescriptorListCarriesItsMemoryTypeToNixl() {
        RegisteredRegion host = agent.allocate("host", 1 << 20);
        try {
            DescriptorList dram = new DescriptorList(2).add(host.address(), 4096).add(host.address() + 4096, 4096);
            agent.release(agent.prepareLocal(dram));
            DescriptorList vram = new DescriptorList(2, MemoryType.VRAM, 0).add(host.address(), 4096)
                    .add(host.address() + 4096, 4096);
            TransferException e = assertThrows(TransferException.class, () -> agent.prepareLocal(vram),
                    "the same addresses as VRAM: no VRAM registration of this agent covers them");
            assertEquals("pdx_dlist_prepare(" + agent.name() + ") failed: NOT_FOUND (-6)", e.getMessage());
            assertEquals(1, agent.openHandles(), "only the host region: the refused list left nothing");
        } finally {
            agent.deregister(host);
        }
    }

    @Test
    void badArgumentsAreRefusedInJavaAndForeignRegionsAreNotTakenBack() {
        DeviceMemory vram = (DeviceMemory) agent;
        assertThrows(IllegalArgumentException.class, () -> vram.registerVram("x", 0, 4096, 0));
        assertThrows(IllegalArgumentException.class, () -> vram.registerVram("x", 0x10000, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> vram.registerVram("x", 0x10000, 4096, -1));
        assertThrows(IllegalArgumentException.class, () -> vram.registerVram(" ", 0x10000, 4096, 0));
        assertThrows(IllegalArgumentException.class, () -> vram.registerVram("x", -4096L, 8192, 0), "wraps around");
        DeviceRegion foreign = new DeviceRegion() {
            public String label() { return "foreign"; }
            public long address() { return 0x10000; }
            public long length() { return 4096; }
            public int deviceOrdinal() { return 0; }
        };
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> vram.deregisterVram(foreign));
        assertTrue(e.getMessage().contains("not held by this agent"), e.getMessage());
        assertEquals(0, agent.openHandles());
    }
}
