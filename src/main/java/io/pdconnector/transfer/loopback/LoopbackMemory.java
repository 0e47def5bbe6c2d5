package io.pdconnector.transfer.loopback;

import io.pdconnector.transfer.NativeStatus;
import io.pdconnector.transfer.RegisteredRegion;
import io.pdconnector.transfer.SharedFile;
import io.pdconnector.transfer.TransferException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/** One loopback agent's registered memory: arena memory, or a locked shared file mapped into an arena. */
final class LoopbackMemory {

    private final LoopbackHandles handles;

    LoopbackMemory(LoopbackHandles handles) {
        this.handles = handles;
    }

    RegisteredRegion allocate(String label, long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("region " + label + " needs a positive size, got " + bytes);
        }
        Arena arena = Arena.ofShared();
        LoopbackRegion region = new LoopbackRegion(label, arena.allocate(bytes, 4096), arena, null, null);
        handles.add(region);
        return region;
    }

    /**
     * As the native helper: the file is new and locked (a POSIX lock held by the open channel), so another
     * live mapping is refused; a file a dead owner left is unlinked, never truncated (an engine may still
     * map it), and a new one takes its path. Mapping READ_WRITE grows the new file to {@code bytes}.
     */
    RegisteredRegion allocateShared(String label, Path file, long bytes) {
        SharedFile.require(file, bytes);
        String call = "allocateShared(" + file + ")";
        FileChannel channel = null;
        try {
            channel = createLocked(file, call);
            if (channel == null) {
                channel = replaceStale(file, call);
            }
            Arena arena = Arena.ofShared();
            LoopbackRegion region = new LoopbackRegion(label, channel.map(FileChannel.MapMode.READ_WRITE, 0, bytes,
                    arena), arena, file, channel);
            handles.add(region);
            return region;
        } catch (IOException e) {
            closeQuietly(channel);
            throw TransferException.of(call, NativeStatus.HELPER_FILE_ERROR.code(), e.toString());
        } catch (RuntimeException e) {
            closeQuietly(channel);
            throw e;
        }
    }

    /** A new file at {@code file}, locked; null when a file is there already. */
    private static FileChannel createLocked(Path file, String call) throws IOException {
        FileChannel channel;
        try {
            channel = FileChannel.open(file, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                    StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS),
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } catch (FileAlreadyExistsException e) {
            return null;
        }
        if (tryLock(channel) == null) {
            closeQuietly(channel);
            throw inUse(call);
        }
        return channel;
    }

    /** The stale file's lock is held across its unlink and the new file's creation, as the helper holds it. */
    private static FileChannel replaceStale(Path file, String call) throws IOException {
        Object named = Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).fileKey();
        try (FileChannel stale = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE,
                LinkOption.NOFOLLOW_LINKS)) {
            if (tryLock(stale) == null || !named.equals(Files.readAttributes(file, BasicFileAttributes.class,
                    LinkOption.NOFOLLOW_LINKS).fileKey())) {
                throw inUse(call);
            }
            Files.delete(file);
            FileChannel fresh = createLocked(file, call);
            if (fresh == null) {
                throw inUse(call);
            }
            return fresh;
        }
    }

    private static TransferException inUse(String call) {
        return TransferException.of(call, NativeStatus.HELPER_FILE_IN_USE.code(), "another mapping holds it");
    }

    private static FileLock tryLock(FileChannel channel) throws IOException {
        try {
            return channel.tryLock();
        } catch (OverlappingFileLockException e) {
            return null; // this JVM holds it already
        }
    }

    void deregister(RegisteredRegion region) {
        LoopbackRegion r = handles.takeRegion(region);
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
}
