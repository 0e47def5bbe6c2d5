package io.pdconnector.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.transfer.ReadPath;
import io.pdconnector.transfer.ReadRequest;
import io.pdconnector.transfer.RegisteredRegion;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferAgentContract;
import io.pdconnector.transfer.TransferEngine;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** The transfer contract on real NIXL, two agents in this process (the two-process case is NixlTwoProcessIT). */
class NixlAgentContractTest extends TransferAgentContract {

    private static NixlHome home() {
        return NixlHome.at(Path.of(System.getProperty("pd.nixl.home")));
    }

    @Override
    protected TransferEngine openEngine() {
        return NixlTransferEngine.open(home(), true, NixlDefaults.PROGRESS_DELAY_US);
    }

    @Override
    protected ForeignPeer foreignPeer(TransferAgent to) {
        return new RawNixlPeer(HelperBindings.load(home()), "foreign-" + System.nanoTime(), to.localMetadata());
    }

    @Test
    void anAgentRefusesCallsFromAThreadOtherThanItsOwner() throws Exception {
        IllegalStateException e = onOtherThread(() -> assertThrows(IllegalStateException.class, d::localMetadata));
        assertTrue(e.getMessage().contains("belongs to thread"), e.getMessage());
    }

    @Test
    void ucxReportsTheTransportOfAReadToTheAgentThatPostedIt() {
        assertNull(NativeLoader.protocolLog().unavailable(), "this process gave UCX its log file");
        RegisteredRegion src = p.allocate("kv", 64 * 1024);
        RegisteredRegion dst = d.allocate("kv", 64 * 1024);
        Prepared lists = prepare(src, dst, 4096, 16);
        int[] idx = IntStream.range(0, 16).toArray();
        p.readPaths();
        d.readPaths();

        ReadRequest first = d.postRead(lists.local(), idx, lists.remote(), idx, null);
        List<ReadPath> reported = d.readPaths();
        await(first);
        d.release(first);

        assertFalse(reported.isEmpty(), "UCX printed the READ's protocol while it was posted");
        for (ReadPath path : reported) {
            assertEquals(d.name(), path.agent());
            assertEquals("host", path.localMemory());
            assertEquals("host", path.remoteMemory());
            assertFalse(path.transportsFrom(4096).isEmpty(), path.toString());
            assertTrue(path.transportsFrom(4096).stream().noneMatch(ReadPath::gpuDirect), path.toString());
        }
        assertTrue(p.readPaths().isEmpty(), "P posted nothing, so nothing is P's");

        ReadRequest second = d.postRead(lists.local(), idx, lists.remote(), idx, null);
        assertTrue(d.readPaths().isEmpty(), "UCX reports a selection once");
        await(second);
        release(lists, second);
        p.deregister(src);
        d.deregister(dst);
    }

    @Test
    void aMissingNixlHomeFailsLoudlyNamingThePath() {
        NixlUnavailableException e = assertThrows(NixlUnavailableException.class,
                () -> NixlHome.at(Path.of("/nonexistent/nixl")));
        assertTrue(e.getMessage().contains("/nonexistent/nixl"), e.getMessage());
    }
}
