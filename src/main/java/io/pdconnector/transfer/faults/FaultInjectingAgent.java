package io.pdconnector.transfer.faults;

import io.pdconnector.transfer.DescriptorList;
import io.pdconnector.transfer.NativeStatus;
import io.pdconnector.transfer.NotificationSink;
import io.pdconnector.transfer.PreparedDescriptors;
import io.pdconnector.transfer.ReadPath;
import io.pdconnector.transfer.ReadRequest;
import io.pdconnector.transfer.RegisteredRegion;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferException;
import io.pdconnector.transfer.TransferStatus;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;

/**
 * One agent of a {@link FaultInjectingEngine}. Confined to its step loop like the agent it wraps,
 * so its maps need no lock. A struck READ is still the real READ underneath: a failure or a delay is
 * reported only on top of its real status, never while its bytes may still land (L13). A struck
 * notification's late copy waits in a small bounded list and is sent by the first call into this agent
 * after it is due, on the loop's thread, so late copies need no thread of their own.
 */
final class FaultInjectingAgent implements TransferAgent {

    /** {@code LeaseNotification.HEARTBEAT_PREFIX}; the transfer layer may not depend on the protocol. */
    static final String HEARTBEAT_PREFIX = "HB:";

    private final TransferAgent inner;
    private final FaultInjectingEngine engine;
    /** Remote lists prepared through this agent that describe a peer's lease slots. */
    private final Map<PreparedDescriptors, Boolean> slotLists = new IdentityHashMap<>();
    private final Map<ReadRequest, Strike> strikes = new IdentityHashMap<>();
    private final DelayedNotifications delayed = new DelayedNotifications();

    private record Strike(FaultPlan.Action action, long untilNanos) {
    }

    FaultInjectingAgent(TransferAgent inner, FaultInjectingEngine engine) {
        this.inner = inner;
        this.engine = engine;
    }

    @Override
    public ReadRequest postRead(PreparedDescriptors local, int[] localIndices, PreparedDescriptors remote,
            int[] remoteIndices, byte[] notification) {
        sendDue();
        boolean slotRead = slotLists.getOrDefault(remote, false);
        boolean hit = engine.strikes(slotRead, sourceRank(remote.owner()));
        FaultPlan plan = hit ? engine.readPlan().orElseThrow() : null;
        if (hit && plan.action() == FaultPlan.Action.HOLD) {
            hold(plan.duration().toNanos());
        }
        ReadRequest request = inner.postRead(local, localIndices, remote, remoteIndices, notification);
        if (hit && plan.action() != FaultPlan.Action.HOLD) {
            strikes.put(request, new Strike(plan.action(), System.nanoTime() + plan.duration().toNanos()));
        }
        return request;
    }

    /**
     * The caller's loop stalls for the whole duration, as a hung call would: a loop is unparked whenever
     * a command arrives, and an unpark must not end the stall early.
     */
    private static void hold(long nanos) {
        long end = System.nanoTime() + nanos;
        for (long left = nanos; left > 0; left = end - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }

    @Override
    public TransferStatus status(ReadRequest request) {
        sendDue();
        Strike strike = strikes.get(request);
        if (strike != null && strike.action() == FaultPlan.Action.DELAY && System.nanoTime() < strike.untilNanos()) {
            return TransferStatus.IN_PROGRESS;
        }
        TransferStatus real = inner.status(request);
        if (strike != null && strike.action() == FaultPlan.Action.FAIL && real == TransferStatus.DONE) {
            throw TransferException.of("status(" + request.remoteAgent() + ")", NativeStatus.BACKEND.code(),
                    "injected by pd.faults");
        }
        return real;
    }

    @Override
    public void release(ReadRequest request) {
        sendDue();
        inner.release(request);
        strikes.remove(request);
    }

    /** The rank of a producer's agent, named {@code <engine-id>-p<rank>}; -1 for any other name. */
    static int sourceRank(String agentName) {
        int at = agentName.lastIndexOf("-p");
        if (at < 0 || at + 2 >= agentName.length()) {
            return -1;
        }
        try {
            return Integer.parseInt(agentName.substring(at + 2));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    @Override
    public PreparedDescriptors prepareRemote(String remoteAgent, DescriptorList descriptors) {
        PreparedDescriptors prepared = inner.prepareRemote(remoteAgent, descriptors);
        if (descriptors.describesLeaseSlots()) {
            slotLists.put(prepared, true);
        }
        return prepared;
    }

    @Override
    public void release(PreparedDescriptors prepared) {
        inner.release(prepared);
        slotLists.remove(prepared);
    }

    @Override
    public String name() {
        return inner.name();
    }

    @Override
    public RegisteredRegion allocate(String label, long bytes) {
        return inner.allocate(label, bytes);
    }

    @Override
    public RegisteredRegion allocateShared(String label, Path file, long bytes) {
        return inner.allocateShared(label, file, bytes);
    }

    @Override
    public void deregister(RegisteredRegion region) {
        inner.deregister(region);
    }

    @Override
    public byte[] localMetadata() {
        return inner.localMetadata();
    }

    @Override
    public String loadRemoteMetadata(byte[] metadata) {
        return inner.loadRemoteMetadata(metadata);
    }

    @Override
    public void invalidateRemote(String remoteAgent) {
        inner.invalidateRemote(remoteAgent);
    }

    @Override
    public PreparedDescriptors prepareLocal(DescriptorList descriptors) {
        return inner.prepareLocal(descriptors);
    }

    @Override
    public void sendNotification(String remoteAgent, byte[] message) {
        sendDue();
        Optional<NotificationFaultPlan.Action> action = engine.strikeNotification(isHeartbeat(message));
        if (action.isEmpty() || !delayed.hasRoom() && action.get() != NotificationFaultPlan.Action.DUPLICATE) {
            inner.sendNotification(remoteAgent, message);
            return;
        }
        long due = System.nanoTime() + engine.notificationPlan().orElseThrow().delay().toNanos();
        switch (action.get()) {
            case DUPLICATE -> {
                inner.sendNotification(remoteAgent, message);
                inner.sendNotification(remoteAgent, message);
            }
            case LATE -> delayed.add(due, remoteAgent, message);
            case REPLAY -> {
                inner.sendNotification(remoteAgent, message);
                delayed.add(due, remoteAgent, message);
            }
        }
    }

    private static boolean isHeartbeat(byte[] message) {
        return new String(message, 0, Math.min(message.length, HEARTBEAT_PREFIX.length()), StandardCharsets.UTF_8)
                .equals(HEARTBEAT_PREFIX);
    }

    /** Sends the late copies that are due, from the loop's own call: no thread of the fault layer's. */
    private void sendDue() {
        delayed.sendDue(System.nanoTime(), inner);
    }

    /** Late copies still waiting; they are lost if the agent closes first, as on a network. */
    int delayedNotifications() {
        return delayed.size();
    }

    @Override
    public List<ReadPath> readPaths() {
        return inner.readPaths();
    }

    @Override
    public int drainNotifications(NotificationSink sink) {
        sendDue();
        return inner.drainNotifications(sink);
    }

    @Override
    public int openHandles() {
        return inner.openHandles();
    }

    @Override
    public void close() {
        inner.close();
    }
}
