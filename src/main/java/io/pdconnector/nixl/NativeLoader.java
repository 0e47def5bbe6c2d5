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
import java.lang.invoke.MethodHandles;
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
    /** Set beside UCX_LOG_FILE when pd-connector chose it, so a second loader in the process knows the file. */
    static final String OWN_LOG = "PD_CONNECTOR_UCX_LOG";

    private static SymbolLookup helper;
    private static Path loadedHome;
    private static UcxProtocolLog protocolLog = UcxProtocolLog.none("NIXL is not loaded");

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
        setenv("NIXL_PLUGIN_DIR", home.pluginDir().toString(), false);
        protocolLog = openProtocolLog();
        SymbolLookup.libraryLookup(home.capiLibrary(), Arena.global());
        SymbolLookup lookup = SymbolLookup.libraryLookup(extractHelper(), Arena.global());
        checkAbi(lookup);
        loadedHome = home.root();
        helper = lookup;
        return lookup;
    }

    /** UCX's READ protocol report for this process ({@link UcxProtocolLog}); set before UCX can load. */
    static synchronized UcxProtocolLog protocolLog() {
        return protocolLog;
    }

    /**
     * Gives UCX a log file of this process's own, with its READ protocol tables in it, unless the environment
     * already chose either setting: an operator's UCX logging is theirs, and then there is no report. The process's
     * environment is read through libc, not {@link System#getenv}: a loader of another class loader in this process
     * (Quarkus's tests) may have set them already, and UCX reads them once, so that file is this process's report.
     */
    private static UcxProtocolLog openProtocolLog() {
        String ours = getenv(OWN_LOG);
        String file = getenv("UCX_LOG_FILE");
        if (ours != null && ours.equals(file)) {
            return UcxProtocolLog.at(Path.of(file), NativeLoader::flushAllStreams);
        }
        for (String own : new String[] {"UCX_PROTO_INFO", "UCX_LOG_FILE"}) {
            String set = getenv(own);
            if (set != null) {
                return UcxProtocolLog.none("the environment sets " + own + "=" + set + ", so UCX's protocol"
                        + " report is not pd-connector's to read");
            }
        }
        try {
            Path dir = Files.createTempDirectory("pd-connector-ucx-");
            Path log = dir.resolve("ucx.log");
            log.toFile().deleteOnExit();
            dir.toFile().deleteOnExit();
            setenv("UCX_PROTO_INFO", UcxProtocolLog.READ_TABLES, true);
            setenv("UCX_LOG_FILE", log.toString(), true);
            setenv(OWN_LOG, log.toString(), true);
            UcxProtocolLog report = UcxProtocolLog.at(log, NativeLoader::flushAllStreams);
            report.startForwarding();
            return report;
        } catch (IOException e) {
            return UcxProtocolLog.none("no folder for UCX's log (" + e.getMessage() + ")");
        }
    }

    /** The process's environment as libc holds it, which {@link #setenv} changes and System.getenv does not see. */
    private static String getenv(String name) {
        Linker linker = Linker.nativeLinker();
        MethodHandle getenv = linker.downcallHandle(linker.defaultLookup().find("getenv").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment value = (MemorySegment) getenv.invokeExact(arena.allocateFrom(name));
            return value.equals(MemorySegment.NULL) ? null : value.reinterpret(Long.MAX_VALUE).getString(0);
        } catch (Throwable t) {
            throw new NixlUnavailableException("getenv(" + name + ") failed", t);
        }
    }

    /**
     * libc's {@code fflush(NULL)}: every output stream of the process written out, UCX's log file among them. Not
     * UCX's own {@code ucs_log_flush}, which also fsyncs the file: about 50 us a call on this machine's disk.
     */
    private static MethodHandle flushAllStreams() {
        Linker linker = Linker.nativeLinker();
        MethodHandle fflush = linker.downcallHandle(linker.defaultLookup().find("fflush").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
        return MethodHandles.dropReturn(MethodHandles.insertArguments(fflush, 0, MemorySegment.NULL));
    }

    private static void setenv(String name, String value, boolean overwrite) {
        Linker linker = Linker.nativeLinker();
        MethodHandle setenv = linker.downcallHandle(linker.defaultLookup().find("setenv").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS,
                        ValueLayout.JAVA_INT));
        try (Arena arena = Arena.ofConfined()) {
            int rc = (int) setenv.invokeExact(arena.allocateFrom(name), arena.allocateFrom(value), overwrite ? 1 : 0);
            if (rc != 0) {
                throw new NixlUnavailableException("setenv(" + name + ") failed with " + rc);
            }
        } catch (NixlUnavailableException e) {
            throw e;
        } catch (Throwable t) {
            throw new NixlUnavailableException("setenv(" + name + ") failed", t);
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
