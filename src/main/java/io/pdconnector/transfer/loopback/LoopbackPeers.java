package io.pdconnector.transfer.loopback;

import io.pdconnector.transfer.NativeStatus;
import io.pdconnector.transfer.TransferException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * One loopback agent's metadata exchange and the peers it has loaded. The metadata names the agent
 * and its incarnation, so a blob from an agent that has since been closed and recreated under the
 * same name finds nothing rather than the newcomer.
 */
final class LoopbackPeers {

    private static final String MAGIC = "loopback-md:";

    private final LoopbackTransferEngine engine;
    private final String name;
    private final long incarnation;
    private final Map<String, LoopbackAgent> peers = new HashMap<>();

    LoopbackPeers(LoopbackTransferEngine engine, String name, long incarnation) {
        this.engine = engine;
        this.name = name;
        this.incarnation = incarnation;
    }

    byte[] localMetadata() {
        return (MAGIC + name + ":" + incarnation).getBytes(StandardCharsets.US_ASCII);
    }

    String load(byte[] metadata) {
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

    void invalidate(String remoteAgent) {
        if (peers.remove(remoteAgent) == null) {
            throw TransferException.of("invalidateRemote", NativeStatus.NOT_FOUND.code(), remoteAgent);
        }
    }

    /** Whether {@code peer} itself (not a later agent under its name) is loaded. */
    boolean holds(LoopbackAgent peer) {
        return peers.get(peer.name()) == peer;
    }

    /** The loaded peer named {@code remoteAgent}; {@code call} names the refused call if there is none. */
    LoopbackAgent require(String call, String remoteAgent) {
        LoopbackAgent peer = peers.get(remoteAgent);
        if (peer == null) {
            throw TransferException.of(call, NativeStatus.NOT_FOUND.code(), "no metadata for " + remoteAgent);
        }
        return peer;
    }
}
