package io.pdconnector.transfer.loopback;

import io.pdconnector.transfer.DescriptorList;
import io.pdconnector.transfer.NativeStatus;
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
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.BiConsumer;

/** An in-process agent; its registered regions and inbox are what peers reach instead of UCX. */
final class LoopbackAgent implements TransferAgent {

    private static final String MAGIC = "loopback-md:";

    private final LoopbackTransferEngine engine;
    private final String name;
    private final long incarnation;
    private final Set<LoopbackRegion> regions = ConcurrentHashMap.newKeySet();
    private final Set<LoopbackDescriptors> prepared = identitySet();
    private final Set<LoopbackRead> reads = identitySet();
    private final Map<String, LoopbackAgent> peers = new HashMap<>();
    private final Queue<Map.Entry<String, byte[]>> inbox = new ConcurrentLinkedQueue<>();
    private volatile boolean closed;

    LoopbackAgent(LoopbackTransferEngine engine, String name, long incarnation) {
        this.engine = engine;
        this.name = Objects.requireNonNull(name);
        this.incarnation = incarnation;
    }

    long incarnation() {
        return incarnation;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public RegisteredRegion allocate(String label, long bytes) {
        open();
        if (bytes <= 0) {
            throw new IllegalArgumentException("region " + label + " needs a positive size, got " + bytes);
        }
        Arena arena = Arena.ofShared();
        LoopbackRegion region = new LoopbackRegion(label, arena.allocate(bytes, 4096), arena, null, null);
        regions.add(region);
        return region;
    }

    /**
     * The file is locked (a POSIX lock held by the open channel) so another live mapping is refused
     * as NIXL's helper refuses it; mapping READ_WRITE grows the truncated file back to {@code bytes}.
     */
    @Override
    public RegisteredRegion allocateShared(String label, Path file, long bytes) {
        open();
        SharedFile.require(file, bytes);
        String call = "allocateShared(" + file + ")";
        FileChannel channel = null;
        try {
            channel = FileChannel.open(file, Set.of(StandardOpenOption.CREATE, StandardOpenOption.READ,
                    StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS),
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            if (tryLock(channel) == null) {
                throw TransferException.of(call, NativeStatus.HELPER_FILE_IN_USE.code(), "another mapping holds it");
            }
            channel.truncate(0);
            Arena arena = Arena.ofShared();
            LoopbackRegion region = new LoopbackRegion(label, channel.map(FileChannel.MapMode.READ_WRITE, 0, bytes,
                    arena), arena, file, channel);
            regions.add(region);
            return region;
        } catch (IOException e) {
            closeQuietly(channel);
            throw TransferException.of(call, NativeStatus.HELPER_FILE_ERROR.code(), e.toString());
        } catch (RuntimeException e) {
            closeQuietly(channel);
            throw e;
        }
    }

    private static FileLock tryLock(FileChannel channel) throws IOException {
        try {
            return channel.tryLock();
        } catch (OverlappingFileLockException e) {
            return null; // this JVM holds it already
        }
    }

    @Override
    public void deregister(RegisteredRegion region) {
        open();
        if (!(region instanceof LoopbackRegion r) || !regions.remove(r)) {
            throw new IllegalArgumentException("this region is not held by agent " + name);
        }
        try {
            if (r.file() != null) {
                Files.deleteIfExists(r.file()); // while the lock is still ours
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot unlink shared region file " + r.file(), e);
        } finally {
            r.arena().close();
            closeQuietly(r.channel());
        }
    }

    private static void closeQuietly(FileChannel channel) {
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException e) {
                // closing releases the lock whatever close reports; nothing else is left to undo
            }
        }
    }

    @Override
    public byte[] localMetadata() {
        open();
        return (MAGIC + name + ":" + incarnation).getBytes(StandardCharsets.US_ASCII);
    }

    @Override
    public String loadRemoteMetadata(byte[] metadata) {
        open();
        String text = new String(metadata, StandardCharsets.US_ASCII);
        int sep = text.lastIndexOf(':');
        if (!text.startsWith(MAGIC) || sep <= MAGIC.length()) {
            throw TransferException.of("loadRemoteMetadata", NativeStatus.INVALID_PARAM.code(), "not loopback metadata");
        }
        String peerName = text.substring(MAGIC.length(), sep);
        LoopbackAgent peer = engine.find(peerName, Long.parseLong(text.substring(sep + 1)));
        if (peer == null) {
            throw TransferException.of("loadRemoteMetadata", NativeStatus.NOT_FOUND.code(), peerName + " is gone");
        }
        peers.put(peerName, peer);
        return peerName;
    }

    @Override
    public void invalidateRemote(String remoteAgent) {
        open();
        if (peers.remove(remoteAgent) == null) {
            throw TransferException.of("invalidateRemote", NativeStatus.NOT_FOUND.code(), remoteAgent);
        }
    }

    @Override
    public PreparedDescriptors prepareLocal(DescriptorList descriptors) {
        open();
        return prepare(this, descriptors);
    }

    @Override
    public PreparedDescriptors prepareRemote(String remoteAgent, DescriptorList descriptors) {
        open();
        LoopbackAgent peer = peers.get(remoteAgent);
        if (peer == null) {
            throw TransferException.of("prepareRemote", NativeStatus.NOT_FOUND.code(), "no metadata for " + remoteAgent);
        }
        return prepare(peer, descriptors);
    }

    private PreparedDescriptors prepare(LoopbackAgent owner, DescriptorList descriptors) {
        if (descriptors.count() == 0) {
            throw new IllegalArgumentException("an empty descriptor list cannot be prepared");
        }
        for (int i = 0; i < descriptors.count(); i++) {
            if (owner.regionOf(descriptors.address(i), descriptors.length(i)) == null) {
                throw TransferException.of("prepare(" + owner.name + ")", NativeStatus.NOT_FOUND.code(),
                        "descriptor " + i + " is outside every registered region");
            }
        }
        LoopbackDescriptors d = new LoopbackDescriptors(owner, descriptors);
        prepared.add(d);
        return d;
    }

    @Override
    public void release(PreparedDescriptors descriptors) {
        open();
        if (!prepared.remove(descriptors)) {
            throw new IllegalArgumentException("this descriptor list is not held by agent " + name);
        }
    }

    @Override
    public ReadRequest postRead(PreparedDescriptors local, int[] localIndices, PreparedDescriptors remote,
            int[] remoteIndices, byte[] notification) {
        open();
        if (!prepared.contains(local) || !prepared.contains(remote)) {
            throw new IllegalArgumentException("descriptor lists must be prepared by agent " + name);
        }
        LoopbackDescriptors l = (LoopbackDescriptors) local;
        LoopbackDescriptors r = (LoopbackDescriptors) remote;
        if (l.agent() != this || r.agent() == this) {
            throw new IllegalArgumentException("a READ goes from a remote list into a local one");
        }
        if (notification != null && notification.length == 0) {
            throw new IllegalArgumentException("a notification must not be empty");
        }
        LoopbackRead read = new LoopbackRead(r.agent(), LoopbackRead.pairs(l, localIndices, r, remoteIndices),
                notification == null ? null : notification.clone());
        reads.add(read);
        return read;
    }

    @Override
    public TransferStatus status(ReadRequest request) {
        open();
        LoopbackRead read = heldRead(request);
        if (!read.done()) {
            read.complete(this);
        }
        return TransferStatus.DONE;
    }

    @Override
    public void release(ReadRequest request) {
        open();
        reads.remove(heldRead(request));
    }

    @Override
    public void sendNotification(String remoteAgent, byte[] message) {
        open();
        if (message == null || message.length == 0) {
            throw new IllegalArgumentException("a notification must not be empty");
        }
        LoopbackAgent peer = peers.get(remoteAgent);
        if (peer == null) {
            throw TransferException.of("sendNotification", NativeStatus.NOT_FOUND.code(), "no metadata for " + remoteAgent);
        }
        peer.deliver(name, message.clone());
    }

    @Override
    public int drainNotifications(BiConsumer<String, byte[]> sink) {
        open();
        int n = 0;
        for (Map.Entry<String, byte[]> e; (e = inbox.poll()) != null; n++) {
            sink.accept(e.getKey(), e.getValue());
        }
        return n;
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
        if (openHandles() != 0) {
            throw new IllegalStateException("agent " + name + " still holds " + openHandles() + " handles");
        }
        closed = true;
        engine.remove(this);
    }

    boolean alive() {
        return !closed && engine.find(name, incarnation) == this;
    }

    void deliver(String from, byte[] message) {
        if (alive()) {
            inbox.add(Map.entry(from, message));
        }
    }

    /** The live region holding [address, address + length), or null. */
    LoopbackRegion regionOf(long address, long length) {
        for (LoopbackRegion r : regions) {
            if (r.contains(address, length)) {
                return r;
            }
        }
        return null;
    }

    private LoopbackRead heldRead(ReadRequest request) {
        if (!(request instanceof LoopbackRead read) || !reads.contains(read)) {
            throw new IllegalArgumentException("this READ is not held by agent " + name);
        }
        return read;
    }

    private void open() {
        if (closed) {
            throw new IllegalStateException("agent " + name + " is closed");
        }
    }

    private static <T> Set<T> identitySet() {
        return Collections.newSetFromMap(new IdentityHashMap<>());
    }
}
