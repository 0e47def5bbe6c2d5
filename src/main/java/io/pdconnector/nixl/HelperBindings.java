package io.pdconnector.nixl;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/**
 * Downcall handles for libpdnixl, built once per process. Each method is one downcall returning the
 * raw int status; turning a status into an exception is the caller's job ({@link NixlAgent} and the
 * collaborators it hands calls to, through {@link NativeChecks}), which also checks every argument
 * before it gets here.
 */
final class HelperBindings {

    private static volatile HelperBindings instance;

    private final MethodHandle agentCreate;
    private final MethodHandle agentDestroy;
    private final MethodHandle memAlloc;
    private final MethodHandle memMapFile;
    private final MethodHandle memRetire;
    private final MethodHandle regionRegister;
    private final MethodHandle regionDeregister;
    private final MethodHandle regionRegisterVram;
    private final MethodHandle localMetadata;
    private final MethodHandle remoteLoad;
    private final MethodHandle remoteInvalidate;
    private final MethodHandle dlistPrepare;
    private final MethodHandle dlistRelease;
    private final MethodHandle readPost;
    private final MethodHandle xferStatus;
    private final MethodHandle xferRelease;
    private final MethodHandle notifSend;
    private final MethodHandle notifDrain;

    private HelperBindings(SymbolLookup lookup) {
        agentCreate = bind(lookup, "pdx_agent_create", ADDRESS, JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, ADDRESS);
        agentDestroy = bind(lookup, "pdx_agent_destroy", ADDRESS);
        memAlloc = bind(lookup, "pdx_mem_alloc", JAVA_LONG, ADDRESS);
        memMapFile = bind(lookup, "pdx_mem_map_file", ADDRESS, JAVA_LONG, ADDRESS);
        memRetire = bind(lookup, "pdx_mem_retire", JAVA_LONG, JAVA_LONG);
        regionRegister = bind(lookup, "pdx_region_register", ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS);
        regionDeregister = bind(lookup, "pdx_region_deregister", ADDRESS, ADDRESS);
        regionRegisterVram = bind(lookup, "pdx_region_register_vram", ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_INT, ADDRESS);
        localMetadata = bind(lookup, "pdx_local_metadata", ADDRESS, ADDRESS, JAVA_LONG, ADDRESS);
        remoteLoad = bind(lookup, "pdx_remote_load", ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG);
        remoteInvalidate = bind(lookup, "pdx_remote_invalidate", ADDRESS, ADDRESS);
        dlistPrepare = bind(lookup, "pdx_dlist_prepare", ADDRESS, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT,
                ADDRESS);
        dlistRelease = bind(lookup, "pdx_dlist_release", ADDRESS, ADDRESS);
        readPost = bind(lookup, "pdx_read_post", ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, JAVA_INT, ADDRESS,
                JAVA_LONG, ADDRESS);
        xferStatus = bind(lookup, "pdx_xfer_status", ADDRESS, ADDRESS);
        xferRelease = bind(lookup, "pdx_xfer_release", ADDRESS, ADDRESS);
        notifSend = bind(lookup, "pdx_notif_send", ADDRESS, ADDRESS, ADDRESS, JAVA_LONG);
        notifDrain = bind(lookup, "pdx_notif_drain", ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS, ADDRESS);
    }

    static HelperBindings load(NixlHome home) {
        HelperBindings b = instance;
        if (b == null) {
            synchronized (HelperBindings.class) {
                b = instance;
                if (b == null) {
                    b = new HelperBindings(NativeLoader.load(home));
                    instance = b;
                }
            }
        } else {
            NativeLoader.load(home); // refuses a second, different home
        }
        return b;
    }

    private static MethodHandle bind(SymbolLookup lookup, String name, java.lang.foreign.MemoryLayout... args) {
        MemorySegment symbol = lookup.find(name)
                .orElseThrow(() -> new NixlUnavailableException("libpdnixl.so has no symbol " + name));
        return Linker.nativeLinker().downcallHandle(symbol, FunctionDescriptor.of(JAVA_INT, args));
    }

    int agentCreate(MemorySegment name, int progressThread, long delayUs, UcxThreads ucx, MemorySegment out) {
        try {
            return (int) agentCreate.invokeExact(name, progressThread, delayUs, ucx.threads(), ucx.splitBatch(), out);
        } catch (Throwable t) {
            throw linkageFailure("pdx_agent_create", t);
        }
    }

    int agentDestroy(MemorySegment agent) {
        try {
            return (int) agentDestroy.invokeExact(agent);
        } catch (Throwable t) {
            throw linkageFailure("pdx_agent_destroy", t);
        }
    }

    int memAlloc(long length, MemorySegment addressOut) {
        try {
            return (int) memAlloc.invokeExact(length, addressOut);
        } catch (Throwable t) {
            throw linkageFailure("pdx_mem_alloc", t);
        }
    }

    int memMapFile(MemorySegment path, long length, MemorySegment addressOut) {
        try {
            return (int) memMapFile.invokeExact(path, length, addressOut);
        } catch (Throwable t) {
            throw linkageFailure("pdx_mem_map_file", t);
        }
    }

    int memRetire(long address, long length) {
        try {
            return (int) memRetire.invokeExact(address, length);
        } catch (Throwable t) {
            throw linkageFailure("pdx_mem_retire", t);
        }
    }

    int regionRegister(MemorySegment agent, long address, long length, MemorySegment out) {
        try {
            return (int) regionRegister.invokeExact(agent, address, length, out);
        } catch (Throwable t) {
            throw linkageFailure("pdx_region_register", t);
        }
    }

    int regionDeregister(MemorySegment agent, MemorySegment region) {
        try {
            return (int) regionDeregister.invokeExact(agent, region);
        } catch (Throwable t) {
            throw linkageFailure("pdx_region_deregister", t);
        }
    }

    /** pd.kv.memory=vram: device memory the caller allocated, registered as VRAM of device {@code dev} (vram.c). */
    int regionRegisterVram(MemorySegment agent, long address, long length, int dev, MemorySegment out) {
        try {
            return (int) regionRegisterVram.invokeExact(agent, address, length, dev, out);
        } catch (Throwable t) {
            throw linkageFailure("pdx_region_register_vram", t);
        }
    }

    int localMetadata(MemorySegment agent, MemorySegment buf, long cap, MemorySegment lenOut) {
        try {
            return (int) localMetadata.invokeExact(agent, buf, cap, lenOut);
        } catch (Throwable t) {
            throw linkageFailure("pdx_local_metadata", t);
        }
    }

    int remoteLoad(MemorySegment agent, MemorySegment md, long len, MemorySegment nameOut, long nameCap) {
        try {
            return (int) remoteLoad.invokeExact(agent, md, len, nameOut, nameCap);
        } catch (Throwable t) {
            throw linkageFailure("pdx_remote_load", t);
        }
    }

    int remoteInvalidate(MemorySegment agent, MemorySegment name) {
        try {
            return (int) remoteInvalidate.invokeExact(agent, name);
        } catch (Throwable t) {
            throw linkageFailure("pdx_remote_invalidate", t);
        }
    }

    int dlistPrepare(MemorySegment agent, MemorySegment remoteName, int memType, int devId, MemorySegment descs, int n,
            MemorySegment out) {
        try {
            return (int) dlistPrepare.invokeExact(agent, remoteName, memType, devId, descs, n, out);
        } catch (Throwable t) {
            throw linkageFailure("pdx_dlist_prepare", t);
        }
    }

    int dlistRelease(MemorySegment agent, MemorySegment dlist) {
        try {
            return (int) dlistRelease.invokeExact(agent, dlist);
        } catch (Throwable t) {
            throw linkageFailure("pdx_dlist_release", t);
        }
    }

    int readPost(MemorySegment agent, MemorySegment local, MemorySegment localIdx, MemorySegment remote,
            MemorySegment remoteIdx, int n, MemorySegment notif, long notifLen, MemorySegment out) {
        try {
            return (int) readPost.invokeExact(agent, local, localIdx, remote, remoteIdx, n, notif, notifLen, out);
        } catch (Throwable t) {
            throw linkageFailure("pdx_read_post", t);
        }
    }

    int xferStatus(MemorySegment agent, MemorySegment xfer) {
        try {
            return (int) xferStatus.invokeExact(agent, xfer);
        } catch (Throwable t) {
            throw linkageFailure("pdx_xfer_status", t);
        }
    }

    int xferRelease(MemorySegment agent, MemorySegment xfer) {
        try {
            return (int) xferRelease.invokeExact(agent, xfer);
        } catch (Throwable t) {
            throw linkageFailure("pdx_xfer_release", t);
        }
    }

    int notifSend(MemorySegment agent, MemorySegment name, MemorySegment msg, long len) {
        try {
            return (int) notifSend.invokeExact(agent, name, msg, len);
        } catch (Throwable t) {
            throw linkageFailure("pdx_notif_send", t);
        }
    }

    int notifDrain(MemorySegment agent, MemorySegment buf, long cap, MemorySegment usedOut, MemorySegment countOut,
            MemorySegment droppedOut) {
        try {
            return (int) notifDrain.invokeExact(agent, buf, cap, usedOut, countOut, droppedOut);
        } catch (Throwable t) {
            throw linkageFailure("pdx_notif_drain", t);
        }
    }

    private static IllegalStateException linkageFailure(String call, Throwable t) {
        return new IllegalStateException("downcall " + call + " failed in the JVM, not in NIXL", t);
    }
}
