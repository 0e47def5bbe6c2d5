package io.pdconnector.cuda;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import org.junit.jupiter.api.Test;

/** The real loader on a host without the CUDA driver (the project's CI machines). */
class CudaLoaderTest {

    private static boolean hostHasLibcuda() {
        try (Arena arena = Arena.ofConfined()) {
            SymbolLookup.libraryLookup(LibCuda.LIBRARY, arena);
            return true;
        } catch (IllegalArgumentException absent) {
            return false;
        }
    }

    @Test
    void withoutLibcudaTheDriverFailsToLoadWithTheSentence() {
        assumeFalse(hostHasLibcuda(), "DID NOT RUN: this host has libcuda.so.1; the no-driver sentence is proven "
                + "only where there is none (scripts/gpu-check.sh covers the driver where it is)");
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class, CudaDriver::load);
        assertTrue(e.getMessage().startsWith("pd.kv.memory=vram needs the CUDA driver library libcuda.so.1, which this "
                + "host does not have ("), e.getMessage());
        assertTrue(e.getMessage().endsWith(", or set pd.kv.memory=dram"), e.getMessage());
        // loading again fails the same way: nothing half-loaded is kept
        assertThrows(CudaUnavailableException.class, CudaDriver::load);
    }
}
