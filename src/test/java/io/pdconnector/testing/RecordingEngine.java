package io.pdconnector.testing;

import io.pdconnector.transfer.DescriptorList;
import io.pdconnector.transfer.NativeStatus;
import io.pdconnector.transfer.NotificationSink;
import io.pdconnector.transfer.PreparedDescriptors;
import io.pdconnector.transfer.ReadRequest;
import io.pdconnector.transfer.RegisteredRegion;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferEngine;
import io.pdconnector.transfer.TransferException;
import io.pdconnector.transfer.TransferStatus;
import io.pdconnector.transfer.loopback.LoopbackTransferEngine;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Loopback with a log of what every agent did, and faults a test can switch on: a refused region
 * registration, and {@link Gates} that keep READs in flight, fail them, and hold notifications
 * until the test lets them through. READs are classified as {@link ReadKind#SLOT} or
 * {@link ReadKind#BLOCK} by whether their remote memory is a lease slot array; a READ released before it was
 * terminal is logged as "cancel" (or "cancel refused", or "cancel leaked" when its bytes still land, see
 * {@link Gates#leakCancels}).
 */
public final class RecordingEngine implements TransferEngine {

    public final List<String> events = Collections.synchronizedList(new ArrayList<>());
    public volatile String refuseRegionLabel;
    /** When set, every agent refuses to load a peer's metadata as NIXL does when it cannot reach it (BACKEND, -2). */
    public volatile boolean refuseRemoteLoads;
    /** When READs land, which fail, and when D's notifications arrive; open (no effect) by default. */
    public final Gates gates = new Gates();

    private final TransferEngine delegate;
    private final List<String> created = Collections.synchronizedList(new ArrayList<>());
    private final List<String> closed = Collections.synchronizedList(new ArrayList<>());
    private final List<long[]> slotRanges = Collections.synchronizedList(new ArrayList<>());
    private final Map<String, RegisteredRegion> regions = Collections.synchronizedMap(new HashMap<>());
    /** READs released in flight whose bytes have not landed yet (Gates#leakCancels), with their agent. */
    private final List<Leaked> leaked = Collections.synchronizedList(new ArrayList<>());

    private record Leaked(TransferAgent inner, ReadRequest request, String route) {
    }

    /** Records a loopback engine. */
    public RecordingEngine() {
        this(new LoopbackTransferEngine());
    }

    /** Records {@code delegate}, e.g. real NIXL; its agents are confined as the delegate's are. */
    public RecordingEngine(TransferEngine delegate) {
        this.delegate = delegate;
    }

    @Override
    public String kind() {
        return "recording-" + delegate.kind();
    }

    @Override
    public TransferAgent createAgent(String name) {
        Agent agent = new Agent(delegate.createAgent(name));
        created.add(name);
        return agent;
    }

    /** Agents created and not (successfully) closed; an agent closes only with no handle left. */
    public List<String> unclosedAgents() {
        synchronized (created) {
            List<String> open = new ArrayList<>(created);
            closed.forEach(open::remove);
            return open;
        }
    }

    @Override
    public void close() {
        delegate.close();
    }

    public long count(String prefix) {
        synchronized (events) {
            return events.stream().filter(e -> e.startsWith(prefix)).count();
        }
    }

    public int indexOf(String prefix) {
        synchronized (events) {
            for (int i = 0; i < events.size(); i++) {
                if (events.get(i).startsWith(prefix)) {
                    return i;
                }
            }
            return -1;
        }
    }

    /** The region {@code agent} registered under {@code label} and has not deregistered, if any. */
    public Optional<RegisteredRegion> region(String agent, String label) {
        return Optional.ofNullable(regions.get(agent + "/" + label));
    }

    /**
     * Lets the bytes of every READ that was "cancelled" while its cancel leaked land now, into
     * whatever the local memory holds at this moment; returns how many landed.
     */
    public int landCancelledReads() {
        List<Leaked> due;
        synchronized (leaked) {
            due = List.copyOf(leaked);
            leaked.clear();
        }
        for (Leaked l : due) {
            land(l);
        }
        return due.size();
    }

    private void land(Leaked l) {
        try {
            l.inner().status(l.request());
            events.add("late landing " + l.route());
        } catch (TransferException e) {
            events.add("late landing " + l.route() + " FAILED");
        }
        l.inner().release(l.request());
    }

    private boolean isSlotMemory(DescriptorList list) {
        long a = list.address(0);
        synchronized (slotRanges) {
            return slotRanges.stream().anyMatch(r -> a >= r[0] && a < r[1]);
        }
    }

    private final class Agent implements TransferAgent {
        private final TransferAgent inner;
        private final Map<PreparedDescriptors, ReadKind> kinds = Collections.synchronizedMap(new IdentityHashMap<>());
        private final Map<ReadRequest, ReadKind> reads = Collections.synchronizedMap(new IdentityHashMap<>());
        private final Set<ReadRequest> terminal = Collections.newSetFromMap(
                Collections.synchronizedMap(new IdentityHashMap<>()));
        /** READs whose peer this agent invalidated: NIXL answers for them at once, whatever the gates. */
        private final Set<ReadRequest> orphaned = Collections.newSetFromMap(
                Collections.synchronizedMap(new IdentityHashMap<>()));

        Agent(TransferAgent inner) {
            this.inner = inner;
        }

        @Override public String name() { return inner.name(); }

        @Override
        public RegisteredRegion allocate(String label, long bytes) {
            refuse(label);
            RegisteredRegion r = inner.allocate(label, bytes);
            if (label.equals("lease-slots")) {
                slotRanges.add(new long[] {r.address(), r.address() + r.length()});
            }
            regions.put(name() + "/" + label, r);
            return r;
        }

        @Override
        public RegisteredRegion allocateShared(String label, Path file, long bytes) {
            refuse(label);
            RegisteredRegion r = inner.allocateShared(label, file, bytes);
            regions.put(name() + "/" + label, r);
            return r;
        }

        private void refuse(String label) {
            if (label.equals(refuseRegionLabel)) {
                throw TransferException.of("registerMem(" + label + ")", NativeStatus.BACKEND.code(), "injected");
            }
        }

        @Override
        public void deregister(RegisteredRegion region) {
            regions.values().remove(region);
            slotRanges.removeIf(r -> r[0] == region.address() && r[1] == region.address() + region.length());
            inner.deregister(region);
        }
        @Override public byte[] localMetadata() { return inner.localMetadata(); }

        @Override
        public String loadRemoteMetadata(byte[] metadata) {
            if (refuseRemoteLoads) {
                events.add("load refused " + name());
                throw io.pdconnector.transfer.TransferException.of("pdx_remote_load", -2);
            }
            String remote = inner.loadRemoteMetadata(metadata);
            events.add("load " + name() + "<-" + remote);
            return remote;
        }

        @Override
        public void invalidateRemote(String remoteAgent) {
            events.add("invalidate " + name() + "<-" + remoteAgent);
            inner.invalidateRemote(remoteAgent);
            synchronized (reads) {
                reads.keySet().stream().filter(r -> r.remoteAgent().equals(remoteAgent)).forEach(orphaned::add);
            }
        }

        @Override public PreparedDescriptors prepareLocal(DescriptorList d) { return inner.prepareLocal(d); }

        @Override
        public PreparedDescriptors prepareRemote(String remoteAgent, DescriptorList d) {
            PreparedDescriptors p = inner.prepareRemote(remoteAgent, d);
            kinds.put(p, isSlotMemory(d) ? ReadKind.SLOT : ReadKind.BLOCK);
            return p;
        }

        @Override public void release(PreparedDescriptors prepared) { inner.release(prepared); }

        @Override
        public ReadRequest postRead(PreparedDescriptors local, int[] li, PreparedDescriptors remote, int[] ri,
                byte[] notification) {
            ReadKind kind = kinds.get(remote);
            gates.crashIfDue(Gates.At.POST, kind, remote.owner());
            gates.hangIfDue(kind, remote.owner());
            ReadRequest r = inner.postRead(local, li, remote, ri, notification);
            reads.put(r, kind);
            events.add("post " + kind.word() + " " + name() + "->" + remote.owner() + " n=" + li.length
                    + (notification == null ? "" : " notif"));
            return r;
        }

        @Override
        public TransferStatus status(ReadRequest request) {
            ReadKind kind = reads.get(request);
            String route = kind.word() + " " + name() + "->" + request.remoteAgent();
            if (!orphaned.contains(request) && !gates.letThrough(kind, request.remoteAgent())) {
                return TransferStatus.IN_PROGRESS;
            }
            gates.crashIfDue(Gates.At.POLL, kind, request.remoteAgent());
            if (gates.takeFailure(kind, request.remoteAgent())) {
                events.add("status " + route + " FAILED");
                terminal.add(request);
                throw TransferException.of("status", NativeStatus.BACKEND.code(), "injected");
            }
            TransferStatus s;
            try {
                s = inner.status(request);
            } catch (TransferException e) {
                events.add("status " + route + " FAILED");
                terminal.add(request);
                throw e;
            }
            events.add("status " + route + " " + s);
            if (s == TransferStatus.DONE) {
                terminal.add(request);
            }
            return s;
        }

        @Override
        public void release(ReadRequest request) {
            ReadKind kind = reads.get(request);
            String route = kind.word() + " " + name() + "->" + request.remoteAgent();
            if (terminal.remove(request)) {
                reads.remove(request);
                orphaned.remove(request);
                inner.release(request);
                return;
            }
            if (gates.refusesCancel(kind, request.remoteAgent())) {
                events.add("cancel refused " + route);
                throw TransferException.of("release(" + request.remoteAgent() + ")", NativeStatus.REPOST_ACTIVE.code(),
                        "injected: the backend cannot cancel a READ in flight");
            }
            reads.remove(request);
            orphaned.remove(request);
            if (gates.cancelsLeak()) {
                events.add("cancel leaked " + route);
                leaked.add(new Leaked(inner, request, route));
                return;
            }
            events.add("cancel " + route);
            inner.release(request);
        }

        @Override
        public void sendNotification(String remoteAgent, byte[] message) {
            String text = new String(message, StandardCharsets.UTF_8);
            if (gates.hold(name(), remoteAgent, text, () -> send(remoteAgent, message, text))) {
                events.add("held " + name() + "->" + remoteAgent + " " + text);
                return;
            }
            send(remoteAgent, message, text);
        }

        private void send(String remoteAgent, byte[] message, String text) {
            inner.sendNotification(remoteAgent, message);
            events.add("notify " + name() + "->" + remoteAgent + " " + text);
        }

        @Override
        public int drainNotifications(NotificationSink sink) {
            return inner.drainNotifications(sink);
        }

        @Override public int openHandles() { return inner.openHandles(); }
        @Override
        public void close() {
            List<Leaked> mine;
            synchronized (leaked) {
                mine = leaked.stream().filter(l -> l.inner() == inner).toList();
                leaked.removeAll(mine);
            }
            mine.forEach(RecordingEngine.this::land);
            events.add("close " + name() + " handles=" + inner.openHandles());
            inner.close();
            closed.add(name());
        }
    }
}
