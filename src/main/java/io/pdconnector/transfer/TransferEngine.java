package io.pdconnector.transfer;

/**
 * A source of transfer agents with NIXL's semantics: one agent per tensor-parallel rank, one-sided
 * READs of registered DRAM, notifications between agents.
 *
 * <p>Implementations: {@code nixl} (real NIXL through FFM) and {@code loopback} (in-process Java,
 * for unit tests and single-process runs).
 */
public interface TransferEngine extends AutoCloseable {

    /** The implementation's name, as configured ({@code nixl} or {@code loopback}). */
    String kind();

    /** Creates an agent; its name must be unique among the agents that will talk to it. */
    TransferAgent createAgent(String name);

    @Override
    void close();
}
