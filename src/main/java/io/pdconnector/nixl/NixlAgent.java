package io.pdconnector.nixl;

import static io.pdconnector.nixl.NativeChecks.check;
import static io.pdconnector.nixl.NativeChecks.checkName;

import io.pdconnector.transfer.DescriptorList;
import io.pdconnector.transfer.DeviceMemory;
import io.pdconnector.transfer.DeviceRegion;
import io.pdconnector.transfer.NotificationSink;
import io.pdconnector.transfer.PreparedDescriptors;
import io.pdconnector.transfer.ReadPath;
import io.pdconnector.transfer.ReadRequest;
import io.pdconnector.transfer.RegisteredRegion;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferException;
import io.pdconnector.transfer.TransferStatus;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;

/**
 * A NIXL agent with its UCX backend. Arguments are checked in Java, here and in the collaborator
 * each call is handed to, before every downcall, so the native side only ever sees what it can take;
 * native statuses become typed {@link TransferException}s ({@link NativeChecks}).
 * Confined to the thread that created it: the connector's step loop. Every call passes
 * {@link #enter()} before it reaches a collaborator; they rely on that and check no thread themselves.
 */
final class NixlAgent implements TransferAgent, DeviceMemory {

    private final HelperBindings native_;
    private final String name;
    private final Thread owner;
    private final MemorySegment agent;
    private final NativeScratch scratch = new NativeScratch();
    private final NixlHandles handles = new NixlHandles();
    private final NixlMemory memory;
    private final NixlMetadata metadata;
    private final NixlDescriptorLists descriptorLists;
    private final NixlReads reads;
    private final NixlNotifications notifications;
    private final NixlDeviceMemory deviceMemory;
    private final UcxProtocolLog protocolLog;
    private final String ucxWorker;
    private boolean closed;

    private NixlAgent(HelperBindings bindings, String name, MemorySegment agent) {
        this.native_ = bindings;
        this.name = name;
        this.agent = agent;
        this.owner = Thread.currentThread();
        this.memory = new NixlMemory(bindings, agent, scratch, handles);
        this.metadata = new NixlMetadata(bindings, agent, scratch);
        this.descriptorLists = new NixlDescriptorLists(bindings, agent, name, scratch, handles);
        this.reads = new NixlReads(bindings, agent, name, scratch, handles);
        this.notifications = new NixlNotifications(bindings, agent, scratch);
        this.deviceMemory = new NixlDeviceMemory(bindings, agent, scratch);
        this.protocolLog = NativeLoader.protocolLog(); // set by the load that made the bindings, and never again
        this.ucxWorker = UcxProtocolLog.workerName(name);
    }

    static NixlAgent create(HelperBindings bindings, String name, boolean progressThread, long delayUs,
            UcxThreads ucxThreads) {
        checkName(name);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            check("pdx_agent_create(" + name + ")",
                    bindings.agentCreate(arena.allocateFrom(name), progressThread ? 1 : 0, delayUs, ucxThreads, out));
            return new NixlAgent(bindings, name, out.get(ValueLayout.ADDRESS, 0));
        }
    }

    @Override
    public String name() {
        return name;
    }

    /** UCX names its worker after the agent, so its tables name this agent ({@link UcxProtocolLog}). */
    @Override
    public List<ReadPath> readPaths() {
        enter();
        return protocolLog.drain(name, ucxWorker);
    }

    @Override
    public RegisteredRegion allocate(String label, long bytes) {
        enter();
        return memory.allocate(label, bytes);
    }

    @Override
    public RegisteredRegion allocateShared(String label, Path file, long bytes) {
        enter();
        return memory.allocateShared(label, file, bytes);
    }

    @Override
    public void deregister(RegisteredRegion region) {
        enter();
        memory.deregister(region);
    }

    @Override
    public DeviceRegion registerVram(String label, long address, long bytes, int deviceOrdinal) {
        enter();
        return deviceMemory.register(label, address, bytes, deviceOrdinal);
    }

    @Override
    public void deregisterVram(DeviceRegion region) {
        enter();
        deviceMemory.deregister(region);
    }

    @Override
    public byte[] localMetadata() {
        enter();
        return metadata.local();
    }

    @Override
    public String loadRemoteMetadata(byte[] blob) {
        enter();
        return metadata.loadRemote(blob);
    }

    @Override
    public void invalidateRemote(String remoteAgent) {
        enter();
        metadata.invalidateRemote(remoteAgent);
    }

    @Override
    public PreparedDescriptors prepareLocal(DescriptorList descriptors) {
        enter();
        return descriptorLists.prepare(null, descriptors);
    }

    @Override
    public PreparedDescriptors prepareRemote(String remoteAgent, DescriptorList descriptors) {
        checkName(remoteAgent);
        enter();
        return descriptorLists.prepare(remoteAgent, descriptors);
    }

    @Override
    public void release(PreparedDescriptors descriptors) {
        enter();
        descriptorLists.release(descriptors);
    }

    @Override
    public ReadRequest postRead(PreparedDescriptors local, int[] localIndices, PreparedDescriptors remote,
            int[] remoteIndices, byte[] notification) {
        enter();
        return reads.post(local, localIndices, remote, remoteIndices, notification);
    }

    @Override
    public TransferStatus status(ReadRequest request) {
        enter();
        return reads.status(request);
    }

    @Override
    public void release(ReadRequest request) {
        enter();
        reads.release(request);
    }

    @Override
    public void sendNotification(String remoteAgent, byte[] message) {
        enter();
        notifications.send(remoteAgent, message);
    }

    @Override
    public int drainNotifications(NotificationSink sink) {
        enter();
        return notifications.drain(sink);
    }

    @Override
    public int openHandles() {
        return handles.count() + deviceMemory.count();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        enter();
        if (openHandles() != 0) {
            throw new IllegalStateException("agent " + name + " still holds " + handles.describe()
                    + (deviceMemory.count() == 0 ? "" : " and " + deviceMemory.count() + " VRAM regions")
                    + "; release them first");
        }
        closed = true;
        scratch.close();
        check("pdx_agent_destroy(" + name + ")", native_.agentDestroy(agent));
    }

    private void enter() {
        if (closed) {
            throw new IllegalStateException("agent " + name + " is closed");
        }
        if (Thread.currentThread() != owner) {
            throw new IllegalStateException("agent " + name + " belongs to thread " + owner.getName()
                    + ", called from " + Thread.currentThread().getName());
        }
    }
}
