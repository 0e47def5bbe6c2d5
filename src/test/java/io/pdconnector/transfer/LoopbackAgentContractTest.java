package io.pdconnector.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.transfer.loopback.LoopbackTransferEngine;
import org.junit.jupiter.api.Test;

class LoopbackAgentContractTest extends TransferAgentContract {

    /** Loopback moves host memory only: a VRAM list is refused, not read as host memory. */
    @Test
    void vramDescriptorListsAreRefused() {
        TransferAgent agent = engine.createAgent("vram-refused");
        RegisteredRegion host = agent.allocate("host", 4096);
        try {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> agent.prepareLocal(new DescriptorList(1, MemoryType.VRAM, 0).add(host.address(), 4096)));
            assertTrue(e.getMessage().contains("host memory only"), e.getMessage());
            assertEquals(1, agent.openHandles(), "nothing prepared");
        } finally {
            agent.deregister(host);
            agent.close();
        }
    }

    @Override
    protected TransferEngine openEngine() {
        return new LoopbackTransferEngine();
    }

    @Override
    protected ForeignPeer foreignPeer(TransferAgent to) {
        LoopbackTransferEngine loopback = (LoopbackTransferEngine) engine;
        return new ForeignPeer() {
            @Override
            public String name() {
                return "foreign-peer";
            }

            @Override
            public void send(byte[] message) {
                loopback.deliverUnchecked(name(), to.name(), message);
            }

            @Override
            public void close() {
            }
        };
    }
}
