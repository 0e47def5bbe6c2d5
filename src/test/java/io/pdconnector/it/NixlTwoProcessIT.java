package io.pdconnector.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.pdconnector.nixl.NixlDefaults;
import io.pdconnector.nixl.NixlHome;
import io.pdconnector.nixl.NixlTransferEngine;
import io.pdconnector.testing.SeededBytes;
import io.pdconnector.transfer.DescriptorList;
import io.pdconnector.transfer.PreparedDescriptors;
import io.pdconnector.transfer.ReadRequest;
import io.pdconnector.transfer.RegisteredRegion;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferException;
import io.pdconnector.transfer.TransferStatus;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Real NIXL between two OS processes: this JVM is the reader (D), a {@link NixlPeer} child is the
 * exporter (P). Every byte read is checked against what P wrote.
 */
class NixlTwoProcessIT {

    private static final long MIB = 1L << 20;
    private static final long DEADLINE_NS = 30_000_000_000L;

    private NixlTransferEngine engine;
    private TransferAgent d;
    private final List<AutoCloseable> cleanup = new ArrayList<>();

    @BeforeEach
    void openReader() {
        engine = NixlTransferEngine.open(NixlHome.at(Path.of(System.getProperty("pd.nixl.home"))), true,
                NixlDefaults.PROGRESS_DELAY_US);
        d = engine.createAgent("it-d-" + ProcessHandle.current().pid());
    }

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : cleanup.reversed()) {
            c.close();
        }
        assertEquals(0, d.openHandles(), "the reader released every region, list and READ");
        d.close();
    }

    @Test
    void reads4096BlocksOf16KiBFromA256MiBRegionEveryByteChecked() throws Exception {
        PeerProcess p = peer("it-p-blocks", 256 * MIB, 8);
        assertEquals("OK", p.command("FILL 11"));
        int block = 16 * 1024;
        List<Integer> sources = IntStream.range(0, (int) (p.kvLength / block)).boxed().collect(
                java.util.stream.Collectors.toCollection(ArrayList::new));
        Collections.shuffle(sources, new Random(7));
        sources = sources.subList(0, 4096);
        RegisteredRegion local = region("dst", 4096L * block);
        DescriptorList remote = new DescriptorList(4096);
        sources.forEach(b -> remote.add(p.kvAddress + (long) b * block, block));

        readAll(p, local, DescriptorList.contiguous(local.address(), block, 4096), remote, null);

        for (int i = 0; i < 4096; i++) {
            long mismatch = SeededBytes.firstMismatch(local.segment(), (long) i * block, block, 11, (long) sources.get(i) * block);
            assertEquals(-1, mismatch, "block " + i + " (source block " + sources.get(i) + ") differs at " + mismatch);
        }
    }

    @Test
    void readsAMixOf4KiBTo1MiBDescriptorsEveryByteChecked() throws Exception {
        PeerProcess p = peer("it-p-mixed", 64 * MIB, 8);
        assertEquals("OK", p.command("FILL 23"));
        long[] sizes = {4096, 8192, 16384, 65536, 262144, MIB};
        Random random = new Random(3);
        DescriptorList remote = new DescriptorList(64);
        List<Long> lengths = new ArrayList<>();
        long sourceAt = 0;
        while (true) {
            long size = sizes[random.nextInt(sizes.length)];
            sourceAt += 4096L * random.nextInt(4); // gaps, so neighbours are not merged into one copy
            if (sourceAt + size > p.kvLength) {
                break;
            }
            remote.add(p.kvAddress + sourceAt, size);
            lengths.add(size);
            sourceAt += size;
        }
        long total = lengths.stream().mapToLong(Long::longValue).sum();
        RegisteredRegion local = region("dst", total);
        DescriptorList localList = new DescriptorList(lengths.size());
        long at = 0;
        for (long len : lengths) {
            localList.add(local.address() + at, len);
            at += len;
        }

        readAll(p, local, localList, remote, null);

        at = 0;
        for (int i = 0; i < lengths.size(); i++) {
            long srcOffset = remote.address(i) - p.kvAddress;
            assertEquals(-1, SeededBytes.firstMismatch(local.segment(), at, lengths.get(i), 23, srcOffset),
                    "descriptor " + i + " of " + lengths.get(i) + " bytes");
            at += lengths.get(i);
        }
        assertTrue(lengths.size() > 50, "the mix had " + lengths.size() + " descriptors");
    }

    @Test
    void reads1000SingleSlotsBatchedInOneRequest() throws Exception {
        PeerProcess p = peer("it-p-slots", MIB, 1000);
        assertEquals("OK", p.command("SLOTS 5000000001"));
        RegisteredRegion local = region("slot-copy", 8L * 1000);

        readAll(p, local, DescriptorList.contiguous(local.address(), 8, 1000),
                DescriptorList.contiguous(p.slotAddress, 8, 1000), null);

        for (int i = 0; i < 1000; i++) {
            assertEquals(5_000_000_001L + i, local.segment().getAtIndex(ValueLayout.JAVA_LONG, i), "slot " + i);
        }
    }

    @Test
    void notificationReachesTheExporterOnlyAfterTheDataIsCompleteAtTheReader() throws Exception {
        PeerProcess p = peer("it-p-notif", 16 * MIB, 8);
        int block = 64 * 1024;
        int blocks = (int) (p.kvLength / block);
        RegisteredRegion local = region("dst", p.kvLength);
        String remoteName = d.loadRemoteMetadata(p.metadata);
        PreparedDescriptors l = d.prepareLocal(DescriptorList.contiguous(local.address(), block, blocks));
        PreparedDescriptors r = prepareRemote(remoteName, DescriptorList.contiguous(p.kvAddress, block, blocks));
        int[] idx = IntStream.range(0, blocks).toArray();
        for (int round = 1; round <= 10; round++) {
            assertEquals("OK", p.command("FILL " + (100 + round)));
            local.segment().fill((byte) 0);
            String message = "req-" + round + ":1:" + (900 + round);
            ReadRequest read = d.postRead(l, idx, r, idx, message.getBytes());
            boolean notified = false;
            long deadline = System.nanoTime() + DEADLINE_NS;
            while (!notified) {
                assertTrue(System.nanoTime() < deadline, "round " + round + ": no notification in time");
                d.status(read);
                String seen = p.command("NOTIFS");
                if (seen.contains(d.name() + "=" + message)) {
                    notified = true;
                    assertEquals(-1, SeededBytes.firstMismatch(local.segment(), 0, p.kvLength, 100 + round, 0),
                            "round " + round + ": P saw the notification before every byte had landed at D");
                }
            }
            assertEquals(TransferStatus.DONE, d.status(read));
            d.release(read);
        }
        d.release(r);
        d.release(l);
    }

    @Test
    void readAfterTheExporterDeregisteredFailsWithATypedErrorNeverStaleSuccess() throws Exception {
        PeerProcess p = peer("it-p-dereg", 4 * MIB, 8);
        assertEquals("OK", p.command("FILL 5"));
        RegisteredRegion local = region("dst", 4 * MIB);
        BlockLists lists = blockLists(p, local);
        PreparedDescriptors l = lists.local();
        PreparedDescriptors r = lists.remote();
        assertEquals("OK", p.command("DEREGISTER"));
        String reuse = p.command("REUSE 77");
        assertTrue(reuse.startsWith("OK"), reuse);
        local.segment().fill((byte) 0);

        TransferException failure = readExpectingFailure(l, r, 64);
        assertEquals(0L, local.segment().get(ValueLayout.JAVA_LONG, 0),
                "no byte of the exporter's later allocation reached the reader");

        System.out.println("READ after deregistration failed as: " + failure.getMessage());
    }

    /**
     * The engine-integration shape across processes: P (the child) registers a shared file, a local
     * engine (this process, through its own mapping) writes the KV, D (this process's agent) READs it
     * from P. After P deregisters, the file is gone and a late READ fails like one of anonymous memory.
     */
    @Test
    void aReaderGetsWhatALocalEngineWroteIntoTheExportersSharedFileAndNothingAfterDeregistration(
            @TempDir Path dir) throws Exception {
        Path file = dir.resolve("it-p-shm-r0.kv");
        PeerProcess p = peer("it-p-shm", 4 * MIB, 8, file);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
                Arena arena = Arena.ofConfined()) {
            SeededBytes.fill(channel.map(FileChannel.MapMode.READ_WRITE, 0, 4 * MIB, arena), 31);
        }
        RegisteredRegion local = region("dst", 4 * MIB);
        BlockLists lists = blockLists(p, local);
        PreparedDescriptors l = lists.local();
        PreparedDescriptors r = lists.remote();
        int[] idx = IntStream.range(0, 64).toArray();
        awaitDone(d.postRead(l, idx, r, idx, null), true);
        assertEquals(-1, SeededBytes.firstMismatch(local.segment(), 0, 4 * MIB, 31, 0), "the engine's bytes, across processes");

        assertEquals("OK", p.command("DEREGISTER"));
        assertFalse(Files.exists(file), "the exporter unlinked its file at deregistration");
        assertTrue(p.command("REUSE 77").startsWith("OK"));
        local.segment().fill((byte) 0);
        TransferException failure = readExpectingFailure(l, r, 64);
        assertEquals(0L, local.segment().get(ValueLayout.JAVA_LONG, 0), "nothing reached the reader");

        System.out.println("READ after deregistering a shared region failed as: " + failure.getMessage());
    }

    @Test
    void readAfterTheExporterExitedFailsWithATypedErrorNeverStaleSuccess() throws Exception {
        PeerProcess p = peer("it-p-exit", 4 * MIB, 8);
        assertEquals("OK", p.command("FILL 6"));
        RegisteredRegion local = region("dst", 4 * MIB);
        BlockLists lists = blockLists(p, local);
        PreparedDescriptors l = lists.local();
        PreparedDescriptors r = lists.remote();
        assertEquals(0, p.exit(), "the exporter released everything before exiting");

        TransferException failure = readExpectingFailure(l, r, 64);

        System.out.println("READ after exit failed as: " + failure.getMessage());
    }

    @Test
    void metadataOfARestartedExporterReplacesTheOldAgent() throws Exception {
        PeerProcess first = peer("it-p-restart", 4 * MIB, 8);
        assertEquals("OK", first.command("FILL 1"));
        RegisteredRegion local = region("dst", 4 * MIB);
        String oldName = d.loadRemoteMetadata(first.metadata);
        PreparedDescriptors l = d.prepareLocal(DescriptorList.contiguous(local.address(), 64 * 1024, 64));
        PreparedDescriptors oldList = prepareRemote(oldName, DescriptorList.contiguous(first.kvAddress, 64 * 1024, 64));
        int[] idx = IntStream.range(0, 64).toArray();
        awaitDone(d.postRead(l, idx, oldList, idx, null), true);
        assertEquals(-1, SeededBytes.firstMismatch(local.segment(), 0, 4 * MIB, 1, 0));
        d.release(oldList);
        assertEquals(0, first.exit());

        PeerProcess second = peer("it-p-restart", 4 * MIB, 8);
        assertEquals("OK", second.command("FILL 2"));
        d.invalidateRemote(oldName);
        String newName = d.loadRemoteMetadata(second.metadata);
        assertEquals(oldName, newName, "the restarted exporter kept its agent name");
        PreparedDescriptors newList = prepareRemote(newName, DescriptorList.contiguous(second.kvAddress, 64 * 1024, 64));
        local.segment().fill((byte) 0);
        awaitDone(d.postRead(l, idx, newList, idx, null), true);

        assertEquals(-1, SeededBytes.firstMismatch(local.segment(), 0, 4 * MIB, 2, 0),
                "the READ returned the restarted exporter's bytes");
        d.release(newList);
        d.release(l);
    }

    private TransferException readExpectingFailure(PreparedDescriptors l, PreparedDescriptors r, int n) {
        int[] idx = IntStream.range(0, n).toArray();
        ReadRequest read;
        try {
            read = d.postRead(l, idx, r, idx, null);
        } catch (TransferException e) {
            return e;
        }
        try {
            return assertThrows(TransferException.class, () -> awaitDone(read, false),
                    "a READ of memory that is gone must fail, not complete");
        } finally {
            d.release(read);
        }
    }

    private void readAll(PeerProcess p, RegisteredRegion local, DescriptorList localList, DescriptorList remoteList,
            byte[] notification) {
        String remoteName = d.loadRemoteMetadata(p.metadata);
        PreparedDescriptors l = d.prepareLocal(localList);
        PreparedDescriptors r = prepareRemote(remoteName, remoteList);
        int[] idx = IntStream.range(0, localList.count()).toArray();
        try {
            awaitDone(d.postRead(l, idx, r, idx, notification), true);
        } finally {
            d.release(r);
            d.release(l);
        }
    }

    /** Polls to completion within the deadline; releases the READ when asked to. */
    private void awaitDone(ReadRequest read, boolean release) {
        long deadline = System.nanoTime() + DEADLINE_NS;
        try {
            while (d.status(read) != TransferStatus.DONE) {
                if (System.nanoTime() > deadline) {
                    fail("READ of " + read.bytes() + " bytes not done within the deadline");
                }
                Thread.onSpinWait();
            }
        } finally {
            if (release) {
                d.release(read);
            }
        }
    }

    /** The connection to a new peer is set up lazily; preparing its list may need a few tries. */
    private PreparedDescriptors prepareRemote(String remoteName, DescriptorList list) {
        long deadline = System.nanoTime() + DEADLINE_NS;
        while (true) {
            try {
                return d.prepareRemote(remoteName, list);
            } catch (TransferException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.onSpinWait();
            }
        }
    }

    /** D's lists of 64 blocks of 64 KiB over {@code local} and over the peer's KV; released after the test. */
    private BlockLists blockLists(PeerProcess p, RegisteredRegion local) {
        String remoteName = d.loadRemoteMetadata(p.metadata);
        PreparedDescriptors l = d.prepareLocal(DescriptorList.contiguous(local.address(), 64 * 1024, 64));
        cleanup.add(() -> d.release(l));
        PreparedDescriptors r = prepareRemote(remoteName, DescriptorList.contiguous(p.kvAddress, 64 * 1024, 64));
        cleanup.add(() -> d.release(r));
        return new BlockLists(l, r);
    }

    private record BlockLists(PreparedDescriptors local, PreparedDescriptors remote) {
    }

    private PeerProcess peer(String name, long kvBytes, int slots) throws Exception {
        return peer(name, kvBytes, slots, null);
    }

    private PeerProcess peer(String name, long kvBytes, int slots, Path sharedKv) throws Exception {
        PeerProcess p = new PeerProcess(name, kvBytes, slots, sharedKv);
        cleanup.add(p);
        return p;
    }

    private RegisteredRegion region(String label, long bytes) {
        RegisteredRegion region = d.allocate(label, bytes);
        cleanup.add(() -> d.deregister(region));
        return region;
    }
}
