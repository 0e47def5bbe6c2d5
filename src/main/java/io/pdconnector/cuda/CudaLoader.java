package io.pdconnector.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;

/**
 * The one place libcuda.so.1 is loaded, once per process and for its life (global arena): the driver
 * keeps process-wide state (contexts, IPC mappings) that cannot be unloaded. Loaded only when
 * {@code pd.kv.memory=vram} asks for it: with {@code dram} nothing here runs.
 */
final class CudaLoader {

    private static CudaBinding loaded;

    private CudaLoader() {
    }

    static synchronized CudaBinding load() {
        if (loaded == null) {
            SymbolLookup lookup;
            try {
                lookup = SymbolLookup.libraryLookup(LibCuda.LIBRARY, Arena.global());
            } catch (IllegalArgumentException e) {
                throw new CudaUnavailableException(noDriver(e.getMessage()), e);
            }
            loaded = new LibCuda(lookup);
        }
        return loaded;
    }

    /** The sentence a start without the driver fails with. */
    static String noDriver(String cause) {
        return "pd.kv.memory=vram needs the CUDA driver library " + LibCuda.LIBRARY + ", which this host does not have ("
                + cause + "): run pd-connector where the NVIDIA driver is installed and given to its container "
                + "(the engine's GPU node), or set pd.kv.memory=dram";
    }
}
