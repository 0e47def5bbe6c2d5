package io.pdconnector.nixl;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferAgentContract;
import io.pdconnector.transfer.TransferEngine;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The transfer contract again with UCX backend threads on ({@code pd.nixl.ucx-threads}): READs split among
 * the backend's threads still land whole, fail and release as without them.
 */
class NixlUcxThreadsContractTest extends TransferAgentContract {

    private static NixlHome home() {
        return NixlHome.at(Path.of(System.getProperty("pd.nixl.home")));
    }

    @Override
    protected TransferEngine openEngine() {
        return NixlTransferEngine.open(home(), true, NixlDefaults.PROGRESS_DELAY_US, new UcxThreads(2, 8));
    }

    @Override
    protected ForeignPeer foreignPeer(TransferAgent to) {
        return new RawNixlPeer(HelperBindings.load(home()), "foreign-" + System.nanoTime(), to.localMetadata());
    }

    @Test
    void settingsOutsideTheHelpersRangeAreRefusedBeforeAnyNativeCall() {
        for (int bad : new int[] {-1, UcxThreads.MAX_THREADS + 1}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new UcxThreads(bad, 0));
            assertTrue(e.getMessage().contains("UCX threads must be in [0, 64], got " + bad), e.getMessage());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new UcxThreads(2, -1));
        assertTrue(e.getMessage().contains("UCX split batch must not be negative, got -1"), e.getMessage());
    }
}
