package io.pdconnector.nixl;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The one place native libraries are loaded. Order matters: NIXL reads {@code NIXL_PLUGIN_DIR} when
 * its first agent is created, and the helper's dependency on {@code libnixl_capi.so} is satisfied by
 * soname only if NIXL's library is loaded first. Libraries stay loaded for the life of the process
 * (global arena): NIXL keeps process-wide state that cannot be unloaded safely.
 */
final class NativeLoader {

    static final String HELPER_RESOURCE = "/native/linux-x86_64/libpdnixl.so";
    static final int EXPECTED_HELPER_ABI = 7;

    private static SymbolLookup helper;
    private static Path loadedHome;

    private NativeLoader() {
    }

    static synchronized SymbolLookup load(NixlHome home) {
        if (helper != null) {
            if (!home.root().equals(loadedHome)) {
                throw new NixlUnavailableException("NIXL is already loaded from " + loadedHome
                        + "; a process can use one NIXL home only (asked for " + home.root() + ")");
            }
            return helper;
        }
        setPluginDirIfUnset(home);
        SymbolLookup.libraryLookup(home.capiLibrary(), Arena.global());
        SymbolLookup lookup = SymbolLookup.libraryLookup(extractHelper(), Arena.global());
        checkAbi(lookup);
        loadedHome = home.root();
        helper = lookup;
        return lookup;
    }

    private static void setPluginDirIfUnset(NixlHome home) {
        Linker linker = Linker.nativeLinker();
        MethodHandle setenv = linker.downcallHandle(linker.defaultLookup().find("setenv").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS,
                        ValueLayout.JAVA_INT));
        try (Arena arena = Arena.ofConfined()) {
            int rc = (int) setenv.invokeExact(arena.allocateFrom("NIXL_PLUGIN_DIR"),
                    arena.allocateFrom(home.pluginDir().toString()), 0);
            if (rc != 0) {
                throw new NixlUnavailableException("setenv(NIXL_PLUGIN_DIR) failed with " + rc);
            }
        } catch (NixlUnavailableException e) {
            throw e;
        } catch (Throwable t) {
            throw new NixlUnavailableException("setenv(NIXL_PLUGIN_DIR) failed", t);
        }
    }

    private static Path extractHelper() {
        try (InputStream in = NativeLoader.class.getResourceAsStream(HELPER_RESOURCE)) {
            if (in == null) {
                throw new NixlUnavailableException("the jar carries no " + HELPER_RESOURCE
                        + "; the Maven build compiles it from src/main/native");
            }
            Path dir = Files.createTempDirectory("pd-connector-native-");
            Path lib = dir.resolve("libpdnixl.so");
            Files.copy(in, lib, StandardCopyOption.REPLACE_EXISTING);
            lib.toFile().deleteOnExit();
            dir.toFile().deleteOnExit();
            return lib;
        } catch (IOException e) {
            throw new NixlUnavailableException("cannot extract " + HELPER_RESOURCE, e);
        }
    }

    private static void checkAbi(SymbolLookup lookup) {
        MemorySegment symbol = lookup.find("pdx_abi_version")
                .orElseThrow(() -> new NixlUnavailableException("libpdnixl.so has no pdx_abi_version"));
        MethodHandle abi = Linker.nativeLinker().downcallHandle(symbol, FunctionDescriptor.of(ValueLayout.JAVA_INT));
        int version;
        try {
            version = (int) abi.invokeExact();
        } catch (Throwable t) {
            throw new NixlUnavailableException("pdx_abi_version failed", t);
        }
        if (version != EXPECTED_HELPER_ABI) {
            throw new NixlUnavailableException("libpdnixl.so ABI " + version + ", expected " + EXPECTED_HELPER_ABI);
        }
    }
}
