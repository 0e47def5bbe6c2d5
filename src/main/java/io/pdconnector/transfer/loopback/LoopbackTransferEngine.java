package io.pdconnector.transfer.loopback;

import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferEngine;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * NIXL's semantics in one process, for unit tests and single-process runs: agents find each other
 * through this engine instead of UCX. A READ copies when its initiator first polls it after posting,
 * so a test can change the source between post and completion, as a real READ allows.
 */
public final class LoopbackTransferEngine implements TransferEngine {

    private final Map<String, LoopbackAgent> agents = new ConcurrentHashMap<>();
    private final AtomicLong incarnations = new AtomicLong();

    @Override
    public String kind() {
        return "loopback";
    }

    @Override
    public TransferAgent createAgent(String name) {
        LoopbackAgent agent = new LoopbackAgent(this, name, incarnations.incrementAndGet());
        if (agents.putIfAbsent(name, agent) != null) {
            throw new IllegalArgumentException("an agent named " + name + " already exists in this engine");
        }
        return agent;
    }

    /**
     * Puts {@code message} in {@code to}'s inbox as {@code from}, a peer outside the connector (another
     * NIXL client, an older build) would: with none of the checks a loopback agent's own send makes,
     * so tests can show what a receiver does with what the connector never sends itself.
     */
    public void deliverUnchecked(String from, String to, byte[] message) {
        LoopbackAgent agent = agents.get(to);
        if (agent == null) {
            throw new IllegalArgumentException("no agent named " + to + " in this engine");
        }
        agent.deliver(from, message.clone());
    }

    LoopbackAgent find(String name, long incarnation) {
        LoopbackAgent agent = agents.get(name);
        return agent != null && agent.incarnation() == incarnation ? agent : null;
    }

    LoopbackAgent find(String name) {
        return agents.get(name);
    }

    void remove(LoopbackAgent agent) {
        agents.remove(agent.name(), agent);
    }

    @Override
    public void close() {
        agents.clear();
    }
}
