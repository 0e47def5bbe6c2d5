package io.pdconnector.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.testing.SeededBytes;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What every {@link TransferEngine} promises, run against each implementation by a subclass: the
 * loopback engine must behave like NIXL for the connector's tests on it to mean anything.
 */
public abstract class TransferAgentContract {

    private static final long DEADLINE_NS = 20_000_000_000L;

    protected TransferEngine engine;
    protected TransferAgent p;
    protected TransferAgent d;
    private String pName;

    protected abstract TransferEngine openEngine();

    /** A peer outside the connector that checks nothing it sends: another NIXL client, an older build. */
    public interface ForeignPeer extends AutoCloseable {
        String name();

        void send(byte[] message);

        @Override
        void close();
    }

    /** A {@link ForeignPeer} of this engine that has loaded {@code to}'s metadata. */
    protected abstract ForeignPeer foreignPeer(TransferAgent to);

    @BeforeEach
    void agents() {
        engine = openEngine();
        String suffix = getClass().getSimpleName() + "-" + System.nanoTime();
        p = engine.createAgent("p-" + suffix);
        d = engine.createAgent("d-" + suffix);
    }

    @AfterEach
    void noLeaks() {
        assertEquals(0, p.openHandles(), "P released everything");
        assertEquals(0, d.openHandles(), "D released everything");
        p.close();
        d.close();
        engine.close();
    }

    @Test
    void readCopiesEveryByteAndDeliversTheNotificationAfterwards() {
        RegisteredRegion src = p.allocate("kv", 256 * 1024);
        RegisteredRegion dst = d.allocate("kv", 256 * 1024);
        SeededBytes.fill(src.segment(), 42);
        Prepared lists = prepare(src, dst, 16 * 1024, 16);
        int[] idx = IntStream.range(0, 16).toArray();

        ReadRequest read = d.postRead(lists.local, idx, lists.remote, idx, "r1:1:7".getBytes(StandardCharsets.UTF_8));
        await(read);
        List<String> seen = drain(p);

        assertEquals(-1, SeededBytes.firstMismatch(dst.segment(), 0, 256 * 1024, 42, 0));
        assertEquals(List.of(d.name() + "=r1:1:7"), seen);
        assertEquals(256 * 1024, read.bytes());
        release(lists, read);
        p.deregister(src);
        d.deregister(dst);
    }

    @Test
    void indicesPickDescriptorsInAnyOrder() {
        RegisteredRegion src = p.allocate("kv", 64 * 1024);
        RegisteredRegion dst = d.allocate("kv", 64 * 1024);
        SeededBytes.fill(src.segment(), 9);
        Prepared lists = prepare(src, dst, 4096, 16);

        ReadRequest read = d.postRead(lists.local, new int[] {0, 1}, lists.remote, new int[] {15, 3}, null);
        await(read);

        assertEquals(-1, SeededBytes.firstMismatch(dst.segment(), 0, 4096, 9, 15 * 4096));
        assertEquals(-1, SeededBytes.firstMismatch(dst.segment(), 4096, 4096, 9, 3 * 4096));
        assertEquals(0L, dst.segment().get(ValueLayout.JAVA_LONG, 2 * 4096), "only the chosen descriptors were written");
        release(lists, read);
        p.deregister(src);
        d.deregister(dst);
    }

    @Test
    void badArgumentsAreRejectedBeforeAnyNativeCallAndChangeNothing() {
        RegisteredRegion src = p.allocate("kv", 64 * 1024);
        RegisteredRegion dst = d.allocate("kv", 64 * 1024);
        Prepared lists = prepare(src, dst, 4096, 16);
        int handles = d.openHandles();

        assertThrows(IllegalArgumentException.class, () -> d.allocate("x", 0));
        assertThrows(IndexOutOfBoundsException.class,
                () -> d.postRead(lists.local, new int[] {16}, lists.remote, new int[] {0}, null));
        assertThrows(IllegalArgumentException.class,
                () -> d.postRead(lists.local, new int[] {0, 1}, lists.remote, new int[] {0}, null));
        assertThrows(IllegalArgumentException.class,
                () -> d.postRead(lists.local, new int[] {}, lists.remote, new int[] {}, null));
        assertThrows(IllegalArgumentException.class,
                () -> d.postRead(lists.remote, new int[] {0}, lists.local, new int[] {0}, null), "direction reversed");
        assertThrows(IllegalArgumentException.class,
                () -> d.postRead(lists.local, new int[] {0}, lists.remote, new int[] {0}, new byte[0]));
        assertThrows(IllegalArgumentException.class, () -> d.sendNotification(pName, new byte[0]));
        assertThrows(IllegalArgumentException.class, () -> p.deregister(dst), "another agent's region");
        assertEquals(handles, d.openHandles(), "rejected calls took no handle");

        release(lists, null);
        assertThrows(IllegalArgumentException.class, () -> d.release(lists.local), "released twice");
        p.deregister(src);
        d.deregister(dst);
    }

    @Test
    void descriptorsOfDifferentLengthsCannotBePaired() {
        RegisteredRegion src = p.allocate("kv", 64 * 1024);
        RegisteredRegion dst = d.allocate("kv", 64 * 1024);
        pName = d.loadRemoteMetadata(p.localMetadata());
        PreparedDescriptors local = d.prepareLocal(DescriptorList.contiguous(dst.address(), 8192, 2));
        PreparedDescriptors remote = prepareRemote(pName, DescriptorList.contiguous(src.address(), 4096, 2));

        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> d.postRead(local, new int[] {0}, remote, new int[] {0}, null));
        assertTrue(e.getMessage().contains("lengths"), e.getMessage());
        d.release(remote);
        d.release(local);
        p.deregister(src);
        d.deregister(dst);
    }

    @Test
    void garbageMetadataIsATypedErrorAndAnUnknownPeerIsNotFound() {
        TransferException garbage = assertThrows(TransferException.class,
                () -> d.loadRemoteMetadata("not metadata at all".getBytes(StandardCharsets.UTF_8)));
        assertFalse(garbage.getMessage().isBlank());
        RegisteredRegion dst = d.allocate("kv", 4096);
        TransferException unknown = assertThrows(TransferException.class,
                () -> d.prepareRemote("nobody", DescriptorList.contiguous(dst.address(), 4096, 1)));
        assertInstanceOf(TransferException.class, unknown);
        assertEquals(0, d.openHandles() - 1, "only the region is held");
        d.deregister(dst);
    }

    @Test
    void notificationsAreAllDeliveredEvenWhenTheyOverflowOneDrainBuffer() {
        RegisteredRegion src = p.allocate("kv", 4096);
        RegisteredRegion dst = d.allocate("kv", 4096);
        prepare(src, dst, 4096, 1).releaseWith(d);
        byte[] filler = "x".repeat(200).getBytes(StandardCharsets.UTF_8);
        int sent = 600; // 600 x ~230 bytes: more than one 64 KiB drain buffer
        for (int i = 0; i < sent; i++) {
            byte[] msg = (i + ":" + new String(filler, StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8);
            d.sendNotification(pName, msg);
        }
        List<String> seen = new ArrayList<>();
        long deadline = System.nanoTime() + DEADLINE_NS;
        while (seen.size() < sent && System.nanoTime() < deadline) {
            seen.addAll(drain(p));
        }

        assertEquals(sent, seen.size());
        for (int i = 0; i < sent; i++) {
            final int n = i;
            assertTrue(seen.stream().anyMatch(s -> s.startsWith(d.name() + "=" + n + ":")), "notification " + i);
        }
        p.deregister(src);
        d.deregister(dst);
    }

    @Test
    void notificationsOverTheMaximumAreDroppedAndCountedAndTheNextOneStillArrives() {
        List<String> seen = new ArrayList<>();
        int[] dropped = {0};
        NotificationSink sink = new NotificationSink() {
            @Override
            public void accept(String from, byte[] msg) {
                seen.add(from + "=" + (msg.length > 64 ? msg.length + " bytes" : new String(msg, StandardCharsets.UTF_8)));
            }

            @Override
            public void dropped(int count) {
                dropped[0] += count;
            }
        };
        String foreignName;
        try (ForeignPeer foreign = foreignPeer(p)) {
            foreignName = foreign.name();
            foreign.send("x".repeat(100 * 1024).getBytes(StandardCharsets.UTF_8)); // over one whole drain buffer
            foreign.send("y".repeat(TransferAgent.MAX_NOTIFICATION_BYTES + 1).getBytes(StandardCharsets.UTF_8));
            foreign.send("after".getBytes(StandardCharsets.UTF_8));
            long deadline = System.nanoTime() + DEADLINE_NS;
            while ((seen.isEmpty() || dropped[0] < 2) && System.nanoTime() < deadline) {
                p.drainNotifications(sink);
            }
        }

        assertEquals(List.of(foreignName + "=after"), seen, "the notification after the oversized ones arrived");
        assertEquals(2, dropped[0], "both oversized notifications were dropped and reported");
        assertEquals(0, p.drainNotifications(sink), "nothing is left behind to fail the next drain");
        assertEquals(2, dropped[0]);
    }

    @Test
    void aNotificationOfTheMaximumSizeArrivesAndALongerOneIsRefusedBeforeItIsSent() {
        RegisteredRegion src = p.allocate("kv", 4096);
        RegisteredRegion dst = d.allocate("kv", 4096);
        Prepared lists = prepare(src, dst, 4096, 1);
        byte[] tooLong = new byte[TransferAgent.MAX_NOTIFICATION_BYTES + 1];
        int handles = d.openHandles();

        assertThrows(TransferException.NotificationTooLarge.class, () -> d.sendNotification(pName, tooLong));
        assertThrows(TransferException.NotificationTooLarge.class,
                () -> d.postRead(lists.local, new int[] {0}, lists.remote, new int[] {0}, tooLong));
        assertEquals(handles, d.openHandles(), "the refused READ took no handle");
        d.sendNotification(pName, "m".repeat(TransferAgent.MAX_NOTIFICATION_BYTES).getBytes(StandardCharsets.UTF_8));

        assertEquals(List.of(d.name() + "=" + "m".repeat(TransferAgent.MAX_NOTIFICATION_BYTES)), drain(p));
        lists.releaseWith(d);
        p.deregister(src);
        d.deregister(dst);
    }

    @Test
    void deregisteredMemoryCannotBeTouchedAgain() {
        RegisteredRegion region = d.allocate("kv", 4096);
        d.deregister(region);

        assertThrows(IllegalStateException.class, () -> region.segment().get(ValueLayout.JAVA_LONG, 0));
        assertThrows(IllegalArgumentException.class, () -> d.deregister(region));
    }

    @Test
    void bytesWrittenThroughAnotherMappingOfASharedFileAreWhatAPeerReads(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("p-r0.kv");
        RegisteredRegion src = p.allocateShared("kv", file, 64 * 1024);
        RegisteredRegion dst = d.allocate("kv", 64 * 1024);
        assertEquals(Optional.of(file), src.sharedFile());
        assertEquals(Optional.empty(), dst.sharedFile());
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
                Arena arena = Arena.ofConfined()) {
            MemorySegment engineView = channel.map(FileChannel.MapMode.READ_WRITE, 0, 64 * 1024, arena);
            assertEquals(-1, engineView.mismatch(arena.allocate(64 * 1024)), "a new shared region starts zeroed");
            // P writes first: a private (copy-on-write) mapping would stop seeing the file from here on
            SeededBytes.fill(src.segment(), 5);
            assertEquals(-1, SeededBytes.firstMismatch(engineView, 0, 64 * 1024, 5, 0), "the engine sees P's writes");
            SeededBytes.fill(engineView, 77);
        }
        Prepared lists = prepare(src, dst, 4096, 16);
        int[] idx = IntStream.range(0, 16).toArray();

        ReadRequest read = d.postRead(lists.local, idx, lists.remote, idx, null);
        await(read);

        assertEquals(-1, SeededBytes.firstMismatch(dst.segment(), 0, 64 * 1024, 77, 0));
        release(lists, read);
        p.deregister(src);
        assertFalse(Files.exists(file), "deregistration unlinks the file");
        assertThrows(IllegalStateException.class, () -> src.segment().get(ValueLayout.JAVA_LONG, 0));
        d.deregister(dst);
    }

    @Test
    void aSharedFileIsOneLiveRegionsAndBadPathsAreRejectedBeforeAnyNativeCall(@TempDir Path dir) {
        Path file = dir.resolve("p-r0.kv");
        RegisteredRegion held = p.allocateShared("kv", file, 4096);

        assertThrows(TransferException.FileInUse.class, () -> d.allocateShared("kv", file, 4096));
        assertThrows(IllegalArgumentException.class, () -> d.allocateShared("kv", Path.of("relative.kv"), 4096));
        assertThrows(IllegalArgumentException.class,
                () -> d.allocateShared("kv", dir.resolve("missing").resolve("x.kv"), 4096));
        assertThrows(IllegalArgumentException.class, () -> d.allocateShared("kv", dir.resolve("y.kv"), 0));
        assertEquals(0, d.openHandles(), "refused calls took no handle");
        assertTrue(Files.exists(file), "a refused second owner did not unlink the holder's file");

        p.deregister(held);
        RegisteredRegion next = d.allocateShared("kv", file, 4096);
        assertTrue(Files.exists(file), "free again once its region was deregistered");
        d.deregister(next);
    }

    /**
     * A pd-connector that was killed leaves its KV file behind while its engine still maps it (a worker
     * copying a pull's blocks out, or a prompt's in). The next owner of the path must not truncate or zero
     * that file under the engine, which would hand the engine zeros or, between the truncation and the
     * new size, SIGBUS: it unlinks it and takes the path with a new file, which the engine maps anew.
     */
    @Test
    void aFileADeadOwnerLeftIsReplacedAndWhatAnEngineMapsOfItStaysAsItWas(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("d-r0.kv");
        int bytes = 64 * 1024;
        try (FileChannel left = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE); Arena arena = Arena.ofConfined()) {
            MemorySegment engineView = left.map(FileChannel.MapMode.READ_WRITE, 0, bytes, arena);
            SeededBytes.fill(engineView, 41); // the dead owner's last pull, which the engine is still copying
            Object stale = Files.readAttributes(file, BasicFileAttributes.class).fileKey();

            RegisteredRegion next = d.allocateShared("kv", file, bytes);
            try {
                assertEquals(-1, SeededBytes.firstMismatch(engineView, 0, bytes, 41, 0),
                        "the engine's mapping of the old file keeps its bytes");
                assertNotEquals(stale, Files.readAttributes(file, BasicFileAttributes.class).fileKey(),
                        "the path names a new file");
                assertEquals(-1, next.segment().mismatch(arena.allocate(bytes)), "the new region starts zeroed");
                SeededBytes.fill(next.segment(), 3);
                assertEquals(-1, SeededBytes.firstMismatch(engineView, 0, bytes, 41, 0),
                        "the new owner's writes land in its own file only");
            } finally {
                d.deregister(next);
            }
        }
        assertFalse(Files.exists(file));
    }

    /**
     * What D relies on to free the blocks of a READ it stopped waiting for when the peer left (L13): once
     * the peer is invalidated, the READ is terminal (done, or not found) and its handle releases, also
     * after the lists it was posted from were released, as a dropped peer's are.
     */
    @Test
    void aReadWhosePeerWasInvalidatedIsTerminalAndReleases() {
        RegisteredRegion src = p.allocate("kv", 4 * 1024 * 1024);
        RegisteredRegion dst = d.allocate("kv", 4 * 1024 * 1024);
        Prepared lists = prepare(src, dst, 64 * 1024, 64);
        int[] idx = IntStream.range(0, 64).toArray();
        ReadRequest read = d.postRead(lists.local, idx, lists.remote, idx, null);

        lists.releaseWith(d);
        d.invalidateRemote(pName);
        long deadline = System.nanoTime() + DEADLINE_NS;
        boolean terminal = false;
        while (!terminal) {
            assertTrue(System.nanoTime() < deadline, "the READ never became terminal");
            try {
                terminal = d.status(read) == TransferStatus.DONE;
            } catch (TransferException e) {
                terminal = true;
            }
        }

        d.release(read);
        p.deregister(src);
        d.deregister(dst);
    }

    @Test
    void anAgentWithHeldHandlesRefusesToClose() {
        RegisteredRegion region = d.allocate("kv", 4096);

        IllegalStateException e = assertThrows(IllegalStateException.class, d::close);
        assertTrue(e.getMessage().contains("1 regions") || e.getMessage().contains("1 handles"), e.getMessage());
        d.deregister(region);
    }

    protected record Prepared(PreparedDescriptors local, PreparedDescriptors remote) {
        void releaseWith(TransferAgent agent) {
            agent.release(remote);
            agent.release(local);
        }
    }

    protected Prepared prepare(RegisteredRegion src, RegisteredRegion dst, long size, int count) {
        pName = d.loadRemoteMetadata(p.localMetadata());
        PreparedDescriptors local = d.prepareLocal(DescriptorList.contiguous(dst.address(), size, count));
        PreparedDescriptors remote = prepareRemote(pName, DescriptorList.contiguous(src.address(), size, count));
        return new Prepared(local, remote);
    }

    private PreparedDescriptors prepareRemote(String name, DescriptorList list) {
        long deadline = System.nanoTime() + DEADLINE_NS;
        while (true) {
            try {
                return d.prepareRemote(name, list);
            } catch (TransferException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
            }
        }
    }

    protected void release(Prepared lists, ReadRequest read) {
        if (read != null) {
            d.release(read);
        }
        lists.releaseWith(d);
    }

    protected void await(ReadRequest read) {
        long deadline = System.nanoTime() + DEADLINE_NS;
        while (d.status(read) != TransferStatus.DONE) {
            assertTrue(System.nanoTime() < deadline, "READ did not complete in time");
        }
    }

    /** Drains until at least one notification arrived or the deadline passed. */
    protected static List<String> drain(TransferAgent agent) {
        List<String> seen = new ArrayList<>();
        long deadline = System.nanoTime() + DEADLINE_NS;
        while (seen.isEmpty() && System.nanoTime() < deadline) {
            agent.drainNotifications((from, msg) -> seen.add(from + "=" + new String(msg, StandardCharsets.UTF_8)));
        }
        return seen;
    }

    /** Used by subclasses whose agents are thread-confined. */
    protected static <T> T onOtherThread(java.util.concurrent.Callable<T> call) throws Exception {
        var pool = Executors.newSingleThreadExecutor();
        try {
            Future<T> f = pool.submit(call);
            return f.get(20, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
    }
}
