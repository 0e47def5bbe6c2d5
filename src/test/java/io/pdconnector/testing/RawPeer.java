package io.pdconnector.testing;

import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.transfer.TransferAgent;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** Sends hand-written notifications to a producer's ranks, as a late, duplicate or rogue peer would. */
public final class RawPeer implements AutoCloseable {

    private final TransferAgent agent;
    private final List<String> remotes;

    RawPeer(TransferAgent agent, List<HandshakeMetadata> ranks) {
        this.agent = agent;
        this.remotes = ranks.stream().map(m -> agent.loadRemoteMetadata(m.agentMetadata())).toList();
    }

    public void send(int rank, String text) {
        agent.sendNotification(remotes.get(rank), text.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public void close() {
        remotes.forEach(agent::invalidateRemote);
        agent.close();
    }
}
