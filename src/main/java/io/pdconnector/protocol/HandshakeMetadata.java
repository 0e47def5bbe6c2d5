package io.pdconnector.protocol;

import io.pdconnector.error.IncompatiblePeerException;
import io.pdconnector.kv.ModelGeometry;
import java.util.Objects;

/**
 * What one rank of an instance publishes so a peer can READ from it. {@code slotBase} and
 * {@code slotCount} are 0 when the instance runs without lease verification.
 */
public record HandshakeMetadata(
        String engineId,
        int rank,
        int tpSize,
        String agentName,
        byte[] agentMetadata,
        long kvBase,
        long kvLength,
        ModelGeometry geometry,
        String layout,
        int numBlocks,
        long slotBase,
        int slotCount,
        int connectorVersion,
        String compatHash) {

    public static final String LAYOUT = "HND";
    /** The connector version both sides must share; in every handshake and in the compatibility hash. */
    public static final int CONNECTOR_VERSION = 15;
    public static final int MAX_BLOCKS = 1 << 24;
    public static final int MAX_SLOTS = 1 << 24;

    public HandshakeMetadata {
        Objects.requireNonNull(engineId, "engineId");
        Objects.requireNonNull(agentName, "agentName");
        Objects.requireNonNull(geometry, "geometry");
        agentMetadata = agentMetadata.clone();
    }

    @Override
    public byte[] agentMetadata() {
        return agentMetadata.clone();
    }

    public long blockBytes() {
        return geometry.blockBytes(tpSize);
    }

    public boolean hasSlots() {
        return slotCount > 0;
    }

    /** Refuses a peer of another connector version or model geometry, saying which differs. */
    public void requireCompatible(ModelGeometry localGeometry, int localVersion) {
        String where = "peer " + engineId + " rank " + rank;
        if (connectorVersion != localVersion) {
            throw new IncompatiblePeerException(where + " runs connector version " + connectorVersion
                    + ", this instance runs " + localVersion + "; upgrade one of them");
        }
        String expected = localGeometry.compatHash(localVersion);
        if (!expected.equals(compatHash)) {
            throw new IncompatiblePeerException(where + " has compatibility hash " + compatHash + " (geometry "
                    + geometry + "), this instance has " + expected + " (geometry " + localGeometry
                    + "); both must serve the same model layout");
        }
        if (!LAYOUT.equals(layout)) {
            throw new IncompatiblePeerException(where + " uses KV layout " + layout + ", only " + LAYOUT
                    + " is supported");
        }
        requireSaneMemory(where);
    }

    /** D sizes descriptor lists from these numbers, so they must describe memory that can exist. */
    private void requireSaneMemory(String where) {
        if (numBlocks < 1 || numBlocks > MAX_BLOCKS || kvLength < (long) numBlocks * blockBytes()) {
            throw new IncompatiblePeerException(where + " publishes " + numBlocks + " blocks of " + blockBytes()
                    + " bytes in a KV region of " + kvLength + " bytes");
        }
        if (slotCount < 0 || slotCount > MAX_SLOTS || slotCount > 0 && slotBase == 0) {
            throw new IncompatiblePeerException(where + " publishes " + slotCount + " lease slots at " + slotBase);
        }
    }
}
