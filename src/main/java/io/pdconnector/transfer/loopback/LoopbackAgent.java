package io.pdconnector.transfer.loopback;

import io.pdconnector.transfer.DescriptorList;
import io.pdconnector.transfer.NotificationSink;
import io.pdconnector.transfer.PreparedDescriptors;
import io.pdconnector.transfer.ReadRequest;
import io.pdconnector.transfer.RegisteredRegion;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferStatus;
import java.nio.file.Path;
import java.util.Objects;

/**
 * An in-process agent; its registered regions and inbox are what peers reach instead of UCX. Each
 * contract call checks the agent is open and hands the work to the collaborator that owns it.
 */
final class LoopbackAgent implements TransferAgent {

    private final LoopbackTransferEngine engine;
    private final String name;
    private final long incarnation;
    private final LoopbackHandles handles;
    private final LoopbackMemory memory;
    private final LoopbackPeers peers;
    private final LoopbackDescriptorLists descriptorLists;
    private final LoopbackReads reads;
    private final LoopbackNotifications notifications;
    private volatile boolean closed;

    LoopbackAgent(LoopbackTransferEngine engine, String name, long incarnation) {
        this.engine = engine;
        this.name = Objects.requireNonNull(name);
        this.incarnation = incarnation;
        this.handles = new LoopbackHandles(name);
        this.memory = new LoopbackMemory(handles);
        this.peers = new LoopbackPeers(engine, name, incarnation);
        this.descriptorLists = new LoopbackDescriptorLists(handles);
        this.reads = new LoopbackReads(handles);
        this.notifications = new LoopbackNotifications(name, peers);
    }

    long incarnation() {
        return incarnation;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public RegisteredRegion allocate(String label, long bytes) {
        open();
        return memory.allocate(label, bytes);
    }

    @Override
    public RegisteredRegion allocateShared(String label, Path file, long bytes) {
        open();
        return memory.allocateShared(label, file, bytes);
    }

    @Override
    public void deregister(RegisteredRegion region) {
        open();
        memory.deregister(region);
    }

    @Override
    public byte[] localMetadata() {
        open();
        return peers.localMetadata();
    }

    @Override
    public String loadRemoteMetadata(byte[] metadata) {
        open();
        return peers.load(metadata);
    }

    @Override
    public void invalidateRemote(String remoteAgent) {
        open();
        peers.invalidate(remoteAgent);
    }

    @Override
    public PreparedDescriptors prepareLocal(DescriptorList descriptors) {
        open();
        return descriptorLists.prepare(this, descriptors);
    }

    @Override
    public PreparedDescriptors prepareRemote(String remoteAgent, DescriptorList descriptors) {
        open();
        return descriptorLists.prepare(peers.require("prepareRemote", remoteAgent), descriptors);
    }

    @Override
    public void release(PreparedDescriptors descriptors) {
        open();
        descriptorLists.release(descriptors);
    }

    @Override
    public ReadRequest postRead(PreparedDescriptors local, int[] localIndices, PreparedDescriptors remote,
            int[] remoteIndices, byte[] notification) {
        open();
        if (remote instanceof LoopbackDescriptors r && r.agent() != this) {
            peers.require("postRead", r.agent().name()); // as in NIXL: an invalidated peer is no longer reachable
        }
        return reads.post(this, local, localIndices, remote, remoteIndices, notification);
    }

    @Override
    public TransferStatus status(ReadRequest request) {
        open();
        return reads.status(this, peers, request);
    }

    @Override
    public void release(ReadRequest request) {
        open();
        reads.release(request);
    }

    @Override
    public void sendNotification(String remoteAgent, byte[] message) {
        open();
        notifications.send(remoteAgent, message);
    }

    @Override
    public int drainNotifications(NotificationSink sink) {
        open();
        return notifications.drain(sink);
    }

    @Override
    public int openHandles() {
        return handles.count();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (openHandles() != 0) {
            throw new IllegalStateException("agent " + name + " still holds " + openHandles() + " handles");
        }
        closed = true;
        engine.remove(this);
    }

    /** Whether peers may still reach this agent: open, and still the engine's agent of that name. */
    boolean alive() {
        return !closed && engine.find(name, incarnation) == this;
    }

    /** A peer's notification; one sent to an agent that is gone is dropped. */
    void deliver(String from, byte[] message) {
        if (alive()) {
            notifications.receive(from, message);
        }
    }

    /** The live region holding [address, address + length), or null; peers' READs and prepares ask. */
    LoopbackRegion regionOf(long address, long length) {
        return handles.regionOf(address, length);
    }

    private void open() {
        if (closed) {
            throw new IllegalStateException("agent " + name + " is closed");
        }
    }
}
