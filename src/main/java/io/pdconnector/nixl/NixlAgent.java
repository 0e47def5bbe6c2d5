package io.pdconnector.nixl;

import io.pdconnector.transfer.DescriptorList;
import io.pdconnector.transfer.PreparedDescriptors;
import io.pdconnector.transfer.ReadRequest;
import io.pdconnector.transfer.RegisteredRegion;
import io.pdconnector.transfer.SharedFile;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferException;
import io.pdconnector.transfer.TransferStatus;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Objects;
import java.util.Set;
import java.util.function.BiConsumer;

/**
 * A NIXL agent with its UCX backend. Arguments are checked here, before every downcall, so the
 * native side only ever sees what it can take; native statuses become typed {@link TransferException}s.
 * Confined to the thread that created it: the connector's step loop.
 */
final class NixlAgent implements TransferAgent {

    /** Bound on an agent metadata blob, ours or a peer's: caps what a peer's handshake can make us allocate. */
    private static final int MAX_METADATA = 1 << 20;
    /** Agent name buffer, NUL included: names are engine ids and ranks, far shorter. */
    private static final int NAME_CAPACITY = 256;
    /** Scratch for one notification drain call; a fuller inbox is drained in more calls (DRAIN_MORE). */
    private static final int DRAIN_BUFFER = 64 * 1024;
    /** Regions are allocated and mapped in whole pages (mmap's unit). */
    private static final long PAGE = 4096;
    /** The helper's PDX_MORE (notif.c): the buffer filled before the inbox emptied. */
    private static final int DRAIN_MORE = 2;

    private final HelperBindings native_;
    private final String name;
    private final Thread owner;
    private final MemorySegment agent;
    private final NativeScratch scratch = new NativeScratch();
    private final Set<NixlRegion> regions = handleSet();
    private final Set<NixlDescriptors> prepared = handleSet();
    private final Set<NixlRead> reads = handleSet();
    private boolean closed;

    private NixlAgent(HelperBindings bindings, String name, MemorySegment agent) {
        this.native_ = bindings;
        this.name = name;
        this.agent = agent;
        this.owner = Thread.currentThread();
    }

    static NixlAgent create(HelperBindings bindings, String name, boolean progressThread, long delayUs) {
        checkName(name);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            check("pdx_agent_create(" + name + ")",
                    bindings.agentCreate(arena.allocateFrom(name), progressThread ? 1 : 0, delayUs, out));
            return new NixlAgent(bindings, name, out.get(ValueLayout.ADDRESS, 0));
        }
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public RegisteredRegion allocate(String label, long bytes) {
        enter();
        if (bytes <= 0) {
            throw new IllegalArgumentException("region " + label + " needs a positive size, got " + bytes);
        }
        long length = pages(bytes);
        MemorySegment out = scratch.out();
        check("pdx_mem_alloc(" + label + ")", native_.memAlloc(length, out));
        return register(label, out.get(ValueLayout.JAVA_LONG, 0), bytes, length, null);
    }

    @Override
    public RegisteredRegion allocateShared(String label, Path file, long bytes) {
        enter();
        SharedFile.require(file, bytes);
        long length = pages(bytes);
        MemorySegment out = scratch.out();
        try (Arena arena = Arena.ofConfined()) {
            check("pdx_mem_map_file(" + file + ")", native_.memMapFile(arena.allocateFrom(file.toString()), length,
                    out));
        }
        return register(label, out.get(ValueLayout.JAVA_LONG, 0), bytes, length, file);
    }

    private static long pages(long bytes) {
        return (bytes + PAGE - 1) / PAGE * PAGE;
    }

    /** Registers memory the helper mapped; if registration fails the memory is released at once. */
    private NixlRegion register(String label, long address, long bytes, long length, Path file) {
        Arena arena = Arena.ofShared();
        MemorySegment segment = MemorySegment.ofAddress(address).reinterpret(bytes, arena, null);
        MemorySegment out;
        try {
            out = scratch.out();
            check("pdx_region_register(" + label + ")", native_.regionRegister(agent, address, length, out));
        } catch (RuntimeException e) {
            retire(arena, address, length, file, label);
            throw e;
        }
        NixlRegion region = new NixlRegion(label, segment, arena, out.get(ValueLayout.ADDRESS, 0), length, file);
        regions.add(region);
        return region;
    }

    /**
     * Deregisters, then retires the memory: Java access ends with the arena, and the range stays
     * mapped inaccessible (see memory.c) so a peer's late READ fails rather than returning bytes.
     */
    @Override
    public void deregister(RegisteredRegion region) {
        enter();
        NixlRegion r = owned(regions, region, "region");
        regions.remove(r);
        try {
            check("pdx_region_deregister(" + r.label() + ")", native_.regionDeregister(agent, r.handle()));
        } finally {
            retire(r.arena(), r.segment().address(), r.mappedLength(), r.file(), r.label());
        }
    }

    /**
     * A shared file is unlinked while this mapping still holds its lock, so the path can only be taken
     * over by a new owner's fresh file, never while it is still ours; then the range is retired.
     */
    private void retire(Arena arena, long address, long length, Path file, String label) {
        arena.close();
        try {
            if (file != null) {
                Files.deleteIfExists(file);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot unlink shared region file " + file, e);
        } finally {
            check("pdx_mem_retire(" + label + ")", native_.memRetire(address, length));
        }
    }

    @Override
    public byte[] localMetadata() {
        enter();
        MemorySegment out = scratch.out();
        MemorySegment buf = scratch.buffer(MAX_METADATA);
        check("pdx_local_metadata", native_.localMetadata(agent, buf, MAX_METADATA, out));
        long len = out.get(ValueLayout.JAVA_LONG, 0);
        return buf.asSlice(0, len).toArray(ValueLayout.JAVA_BYTE);
    }

    @Override
    public String loadRemoteMetadata(byte[] metadata) {
        enter();
        Objects.requireNonNull(metadata, "metadata");
        if (metadata.length == 0 || metadata.length > MAX_METADATA) {
            throw new IllegalArgumentException("metadata blob of " + metadata.length + " bytes is not plausible");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment md = arena.allocateFrom(ValueLayout.JAVA_BYTE, metadata);
            MemorySegment nameOut = arena.allocate(NAME_CAPACITY);
            check("pdx_remote_load", native_.remoteLoad(agent, md, metadata.length, nameOut, NAME_CAPACITY));
            return nameOut.getString(0);
        }
    }

    @Override
    public void invalidateRemote(String remoteAgent) {
        enter();
        checkName(remoteAgent);
        check("pdx_remote_invalidate(" + remoteAgent + ")",
                native_.remoteInvalidate(agent, scratch.name(remoteAgent)));
    }

    @Override
    public PreparedDescriptors prepareLocal(DescriptorList descriptors) {
        return prepare(null, descriptors);
    }

    @Override
    public PreparedDescriptors prepareRemote(String remoteAgent, DescriptorList descriptors) {
        checkName(remoteAgent);
        return prepare(remoteAgent, descriptors);
    }

    private PreparedDescriptors prepare(String remoteAgent, DescriptorList descriptors) {
        enter();
        if (descriptors.count() == 0) {
            throw new IllegalArgumentException("an empty descriptor list cannot be prepared");
        }
        long[] lengths = new long[descriptors.count()];
        for (int i = 0; i < lengths.length; i++) {
            lengths[i] = descriptors.length(i);
        }
        String owner = remoteAgent == null ? name : remoteAgent;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pairs = arena.allocateFrom(ValueLayout.JAVA_LONG, descriptors.flatPairs());
            MemorySegment remote = remoteAgent == null ? MemorySegment.NULL : scratch.name(remoteAgent);
            MemorySegment out = scratch.out();
            check("pdx_dlist_prepare(" + owner + ")",
                    native_.dlistPrepare(agent, remote, pairs, descriptors.count(), out));
            NixlDescriptors d = new NixlDescriptors(owner, descriptors.count(), lengths,
                    out.get(ValueLayout.ADDRESS, 0));
            prepared.add(d);
            return d;
        }
    }

    @Override
    public void release(PreparedDescriptors descriptors) {
        enter();
        NixlDescriptors d = owned(prepared, descriptors, "descriptor list");
        prepared.remove(d);
        check("pdx_dlist_release(" + d.owner() + ")", native_.dlistRelease(agent, d.handle()));
    }

    @Override
    public ReadRequest postRead(PreparedDescriptors local, int[] localIndices, PreparedDescriptors remote,
            int[] remoteIndices, byte[] notification) {
        enter();
        NixlDescriptors l = owned(prepared, local, "local descriptor list");
        NixlDescriptors r = owned(prepared, remote, "remote descriptor list");
        if (!l.owner().equals(name) || r.owner().equals(name)) {
            throw new IllegalArgumentException("a READ goes from a remote list into a local one");
        }
        long bytes = checkPairs(l, localIndices, r, remoteIndices);
        if (notification != null && notification.length == 0) {
            throw new IllegalArgumentException("a notification must not be empty");
        }
        MemorySegment notif = notification == null ? MemorySegment.NULL : scratch.bytes(notification);
        long notifLen = notification == null ? 0 : notification.length;
        MemorySegment out = scratch.out();
        int rc = check("pdx_read_post(" + r.owner() + ")", native_.readPost(agent, l.handle(),
                scratch.localIndices(localIndices), r.handle(), scratch.remoteIndices(remoteIndices),
                localIndices.length, notif, notifLen, out));
        NixlRead read = new NixlRead(r.owner(), localIndices.length, bytes, out.get(ValueLayout.ADDRESS, 0),
                rc == 0);
        reads.add(read);
        return read;
    }

    /** Checks indices and matching lengths in Java, and returns the READ's byte count. */
    private static long checkPairs(NixlDescriptors l, int[] li, NixlDescriptors r, int[] ri) {
        if (li.length == 0 || li.length != ri.length) {
            throw new IllegalArgumentException("a READ needs as many local as remote indices, and at least one; got "
                    + li.length + " and " + ri.length);
        }
        long bytes = 0;
        for (int i = 0; i < li.length; i++) {
            Objects.checkIndex(li[i], l.count());
            Objects.checkIndex(ri[i], r.count());
            if (l.lengths()[li[i]] != r.lengths()[ri[i]]) {
                throw new IllegalArgumentException("descriptor pair " + i + " has lengths " + l.lengths()[li[i]]
                        + " (local) and " + r.lengths()[ri[i]] + " (remote)");
            }
            bytes += l.lengths()[li[i]];
        }
        return bytes;
    }

    @Override
    public TransferStatus status(ReadRequest request) {
        enter();
        NixlRead read = owned(reads, request, "READ");
        if (read.done) {
            return TransferStatus.DONE;
        }
        int rc = check("pdx_xfer_status(" + read.remoteAgent() + ")", native_.xferStatus(agent, read.handle));
        read.done = rc == 0;
        return read.done ? TransferStatus.DONE : TransferStatus.IN_PROGRESS;
    }

    @Override
    public void release(ReadRequest request) {
        enter();
        NixlRead read = owned(reads, request, "READ");
        reads.remove(read);
        check("pdx_xfer_release(" + read.remoteAgent() + ")", native_.xferRelease(agent, read.handle));
    }

    @Override
    public void sendNotification(String remoteAgent, byte[] message) {
        enter();
        checkName(remoteAgent);
        if (message == null || message.length == 0) {
            throw new IllegalArgumentException("a notification must not be empty");
        }
        check("pdx_notif_send(" + remoteAgent + ")",
                native_.notifSend(agent, scratch.name(remoteAgent), scratch.bytes(message), message.length));
    }

    @Override
    public int drainNotifications(BiConsumer<String, byte[]> sink) {
        enter();
        int total = 0;
        MemorySegment buf = scratch.buffer(DRAIN_BUFFER);
        while (true) {
            MemorySegment out = scratch.out();
            int rc = check("pdx_notif_drain", native_.notifDrain(agent, buf, DRAIN_BUFFER, out, out.asSlice(8)));
            long used = out.get(ValueLayout.JAVA_LONG, 0);
            int count = out.get(ValueLayout.JAVA_INT, 8);
            NotificationRecords.forEach(buf.asSlice(0, used), count, sink);
            total += count;
            if (rc != DRAIN_MORE) {
                return total;
            }
        }
    }

    @Override
    public int openHandles() {
        return regions.size() + prepared.size() + reads.size();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        enter();
        if (openHandles() != 0) {
            throw new IllegalStateException("agent " + name + " still holds " + regions.size() + " regions, "
                    + prepared.size() + " descriptor lists and " + reads.size() + " READs; release them first");
        }
        closed = true;
        scratch.close();
        check("pdx_agent_destroy(" + name + ")", native_.agentDestroy(agent));
    }

    private void enter() {
        if (closed) {
            throw new IllegalStateException("agent " + name + " is closed");
        }
        if (Thread.currentThread() != owner) {
            throw new IllegalStateException("agent " + name + " belongs to thread " + owner.getName()
                    + ", called from " + Thread.currentThread().getName());
        }
    }

    private static <T> T owned(Set<T> handles, Object handle, String what) {
        Objects.requireNonNull(handle, what);
        if (!handles.contains(handle)) {
            throw new IllegalArgumentException("this " + what + " is not held by this agent (released twice, or another agent's)");
        }
        @SuppressWarnings("unchecked")
        T t = (T) handle;
        return t;
    }

    private static void checkName(String name) {
        if (name == null || name.isBlank() || name.length() >= NAME_CAPACITY || name.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("agent name must be 1-" + (NAME_CAPACITY - 1)
                    + " characters without NUL, got " + name);
        }
        if (!StandardCharsets.US_ASCII.newEncoder().canEncode(name)) {
            throw new IllegalArgumentException("agent name must be ASCII, got " + name);
        }
    }

    private static int check(String call, int rc) {
        if (rc < 0) {
            throw TransferException.of(call, rc);
        }
        return rc;
    }

    private static <T> Set<T> handleSet() {
        return Collections.newSetFromMap(new IdentityHashMap<>());
    }
}
