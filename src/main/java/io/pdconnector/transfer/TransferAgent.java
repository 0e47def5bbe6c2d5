package io.pdconnector.transfer;

import java.nio.file.Path;
import java.util.List;

/**
 * One NIXL agent. Not thread-safe by design: the connector's step loop is its only caller, which
 * is what lets the native side run without locks.
 *
 * <p>Every handle returned here has exactly one release path on this agent ({@link #deregister},
 * {@link #release(PreparedDescriptors)}, {@link #release(ReadRequest)}); {@link #close()} refuses
 * to run while any is still held, so a leak shows up as an error rather than a silent free.
 */
public interface TransferAgent extends AutoCloseable {

    /**
     * The largest notification, in bytes, an agent sends or delivers: {@link #sendNotification} and
     * {@link #postRead} refuse a longer one with {@link TransferException.NotificationTooLarge}
     * before it leaves, and {@link #drainNotifications} drops and counts a longer one a peer outside
     * the connector sent anyway. The connector's own are far shorter (heartbeats are cut at 4 KB).
     */
    int MAX_NOTIFICATION_BYTES = 32 * 1024;

    String name();

    /** Allocates {@code bytes} of page-aligned DRAM and registers it; the memory lives exactly as long as the registration. */
    RegisteredRegion allocate(String label, long bytes);

    /**
     * Like {@link #allocate}, but the memory is the file {@code file} (absolute; its directory must
     * exist): created or truncated, {@code bytes} reserved and zeroed, mapped shared and registered.
     * A local process that maps the same file writes straight into what peers READ. The file stays
     * this region's for as long as it is registered: another live mapping of it is refused with
     * {@link TransferException.FileInUse}, and {@link #deregister} unlinks it before the memory goes.
     */
    RegisteredRegion allocateShared(String label, Path file, long bytes);

    /** Deregisters the region and frees its memory (unlinking its file, if shared); the segment is unusable afterwards. */
    void deregister(RegisteredRegion region);

    /** This agent's metadata blob, opaque bytes a peer loads with {@link #loadRemoteMetadata}. */
    byte[] localMetadata();

    /** Loads a peer's metadata and returns the peer agent's name. */
    String loadRemoteMetadata(byte[] metadata);

    /** Forgets a peer; descriptor lists prepared for it must not be posted any more. */
    void invalidateRemote(String remoteAgent);

    /** Prepares descriptors of this agent's own registered memory. */
    PreparedDescriptors prepareLocal(DescriptorList descriptors);

    /** Prepares descriptors of a peer's registered memory (its metadata must be loaded). */
    PreparedDescriptors prepareRemote(String remoteAgent, DescriptorList descriptors);

    void release(PreparedDescriptors prepared);

    /**
     * Posts one READ of {@code localIndices.length} descriptors, local[i] &lt;- remote[i]. With a
     * non-null {@code notification}, the peer receives it once every byte has landed here.
     */
    ReadRequest postRead(PreparedDescriptors local, int[] localIndices, PreparedDescriptors remote,
            int[] remoteIndices, byte[] notification);

    /**
     * Polls a posted READ; a failed READ throws the typed {@link TransferException}, and so does one
     * still in progress whose peer this agent has invalidated since ({@link TransferException.NotFound}).
     * Either way the READ is terminal: no byte of it lands any more.
     */
    TransferStatus status(ReadRequest request);

    /**
     * Releases a READ, cancelling it if it is still in flight. A cancel may report success while bytes
     * still land, so a caller that reuses the memory releases only READs {@link #status} reported
     * terminal. If the engine refuses (NIXL: the backend cannot cancel, REPOST_ACTIVE), this throws and
     * the READ stays held: poll it, and release it again once it is terminal.
     */
    void release(ReadRequest request);

    /** Sends {@code message} (1..{@link #MAX_NOTIFICATION_BYTES} bytes) to a loaded peer. */
    void sendNotification(String remoteAgent, byte[] message);

    /**
     * Hands every notification received since the last drain to {@code sink}; returns how many. One
     * over {@link #MAX_NOTIFICATION_BYTES} is dropped instead, never thrown about, and counted through
     * {@link NotificationSink#dropped}.
     */
    int drainNotifications(NotificationSink sink);

    /** Regions, prepared lists and READs this agent still holds. */
    int openHandles();

    /**
     * The READ paths the transfer library reported for this agent since the last call, oldest first
     * ({@link ReadPath}): what it selected for the READs this agent posted. Empty where it reports none.
     */
    default List<ReadPath> readPaths() {
        return List.of();
    }

    @Override
    void close();
}
