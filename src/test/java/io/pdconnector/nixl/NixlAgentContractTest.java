package io.pdconnector.nixl;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferAgentContract;
import io.pdconnector.transfer.TransferEngine;
import java.nio.file.Path;
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
    void aMissingNixlHomeFailsLoudlyNamingThePath() {
        NixlUnavailableException e = assertThrows(NixlUnavailableException.class,
                () -> NixlHome.at(Path.of("/nonexistent/nixl")));
        assertTrue(e.getMessage().contains("/nonexistent/nixl"), e.getMessage());
    }
}
