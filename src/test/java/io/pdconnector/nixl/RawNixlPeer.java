package io.pdconnector.nixl;

import io.pdconnector.transfer.TransferAgentContract;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A NIXL agent driven straight through the helper, with none of {@link NixlAgent}'s checks: a peer
 * outside the connector (another NIXL client, an older build) that may send what ours never would.
 */
final class RawNixlPeer implements TransferAgentContract.ForeignPeer {

    private static final long DEADLINE_NS = 20_000_000_000L;

    private final HelperBindings native_;
    private final Arena arena = Arena.ofConfined();
    private final String name;
    private final MemorySegment agent;
    private final MemorySegment remote;

    RawNixlPeer(HelperBindings bindings, String name, byte[] remoteMetadata) {
        this.native_ = bindings;
        this.name = name;
        MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
        NativeChecks.check("pdx_agent_create", bindings.agentCreate(arena.allocateFrom(name), 1,
                NixlDefaults.PROGRESS_DELAY_US, UcxThreads.NONE, out));
        this.agent = out.get(ValueLayout.ADDRESS, 0);
        this.remote = arena.allocate(NativeChecks.NAME_CAPACITY);
        MemorySegment md = arena.allocateFrom(ValueLayout.JAVA_BYTE, remoteMetadata);
        NativeChecks.check("pdx_remote_load", bindings.remoteLoad(agent, md, remoteMetadata.length, remote,
                NativeChecks.NAME_CAPACITY));
    }

    @Override
    public String name() {
        return name;
    }

    /** Sends as is, retrying while the connection to the peer is still being set up. */
    @Override
    public void send(byte[] message) {
        MemorySegment msg = arena.allocateFrom(ValueLayout.JAVA_BYTE, message);
        long deadline = System.nanoTime() + DEADLINE_NS;
        int rc;
        while ((rc = native_.notifSend(agent, remote, msg, message.length)) < 0 && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        NativeChecks.check("pdx_notif_send", rc);
    }

    @Override
    public void close() {
        native_.remoteInvalidate(agent, remote);
        NativeChecks.check("pdx_agent_destroy", native_.agentDestroy(agent));
        arena.close();
    }
}
