package io.pdconnector.transfer;

/** A descriptor list prepared once (per peer) and then addressed by index in every READ. */
public interface PreparedDescriptors {

    /** The agent owning the memory described: the peer's name, or this agent's own for local lists. */
    String owner();

    int count();
}
