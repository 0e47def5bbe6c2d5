package io.pdconnector.testing;

import io.pdconnector.transfer.DescriptorList;
import io.pdconnector.transfer.DeviceMemory;
import io.pdconnector.transfer.DevicePool;
import io.pdconnector.transfer.DeviceRegion;
import io.pdconnector.transfer.KvPools;
import io.pdconnector.transfer.MemoryType;
import io.pdconnector.transfer.PoolShare;
import io.pdconnector.transfer.PreparedDescriptors;
import io.pdconnector.transfer.ReadPath;
import io.pdconnector.transfer.ReadRequest;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferEngine;
import io.pdconnector.transfer.TransferException;
import io.pdconnector.transfer.TransferStatus;
import io.pdconnector.transfer.loopback.LoopbackTransferEngine;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Loopback agents that can also register "VRAM" (a fake {@link DeviceMemory}), and {@link KvPools} whose
 * pools are fakes: so the ranks' {@code pd.kv.memory=vram} wiring is tested without a GPU. Every event
 * (agent closed, pool opened, zeroed, closed, registered, deregistered) goes into one {@link #events} list,
 * so a test sees their order.
 */
public final class DeviceMemoryEngine implements TransferEngine {

    public final List<String> events = Collections.synchronizedList(new ArrayList<>());
    /** Every descriptor list prepared: agent, local or remote, memory type, device. */
    public final List<String> prepared = Collections.synchronizedList(new ArrayList<>());
    private final LoopbackTransferEngine inner = new LoopbackTransferEngine();
    private final Set<DeviceRegion> registered = Collections.synchronizedSet(new HashSet<>());
    /** Set to make the next pool fail after its registration (the pool undoes it). */
    public volatile RuntimeException failNextPool;
    /**
     * True: a READ over a VRAM list is accepted and done at once, moving nothing (what it would move is not what
     * such a test checks); false, the default: it fails at its post, as loopback cannot move VRAM.
     */
    public volatile boolean vramReadsComplete;
    /** What an agent's next {@code readPaths()} returns, by agent name: taken once, as a library reports once. */
    public final Map<String, List<ReadPath>> nextReadPaths = new ConcurrentHashMap<>();

    /** A READ over VRAM lists that {@link #vramReadsComplete} accepted: identity matters, so a class. */
    private static final class VramRead implements ReadRequest {
        private final int count;

        VramRead(int count) {
            this.count = count;
        }

        @Override public String remoteAgent() { return "remote"; }
        @Override public int descriptorCount() { return count; }
        @Override public long bytes() { return 0; }
    }

    private final Set<VramRead> vramReads = Collections.synchronizedSet(new HashSet<>());

    /** A VRAM list "prepared" on loopback: identity matters, so a class, not a record. */
    private static final class VramList implements PreparedDescriptors {
        private final String owner;
        private final int count;

        VramList(String owner, int count) {
            this.owner = owner;
            this.count = count;
        }

        @Override public String owner() { return owner; }
        @Override public int count() { return count; }
    }

    private final Set<VramList> vramLists = Collections.synchronizedSet(new HashSet<>());

    record Region(String label, long address, long length, int deviceOrdinal) implements DeviceRegion {
    }

    @Override
    public String kind() {
        return "loopback+vram";
    }

    @Override
    public TransferAgent createAgent(String name) {
        TransferAgent agent = inner.createAgent(name);
        return (TransferAgent) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {TransferAgent.class, DeviceMemory.class}, (proxy, method, args) -> {
                    switch (method.getName()) {
                        case "registerVram" -> {
                            Region r = new Region((String) args[0], (long) args[1], (long) args[2], (int) args[3]);
                            registered.add(r);
                            events.add(name + ".registerVram");
                            return r;
                        }
                        case "deregisterVram" -> {
                            if (!registered.remove((DeviceRegion) args[0])) {
                                throw new IllegalArgumentException("not registered");
                            }
                            events.add(name + ".deregisterVram");
                            return null;
                        }
                        case "openHandles" -> {
                            return agent.openHandles() + (int) registered.stream()
                                    .filter(r -> r.label().startsWith(name)).count()
                                    + (int) vramLists.stream().filter(l -> l.owner().equals(name)).count()
                                    + vramReads.size();
                        }
                        case "readPaths" -> {
                            List<ReadPath> next = nextReadPaths.remove(name);
                            return next == null ? List.of() : next;
                        }
                        case "status" -> {
                            if (args[0] instanceof VramRead) {
                                return TransferStatus.DONE;
                            }
                        }
                        case "close" -> {
                            if (registered.stream().anyMatch(r -> r.label().startsWith(name))
                                    || vramLists.stream().anyMatch(l -> l.owner().equals(name))) {
                                throw new IllegalStateException(name + " still holds a VRAM region or list");
                            }
                            events.add(name + ".close");
                        }
                        case "prepareLocal", "prepareRemote" -> {
                            DescriptorList list = (DescriptorList) args[args.length - 1];
                            prepared.add(name + " " + method.getName() + " " + list.memoryType() + " "
                                    + list.deviceId());
                            if (list.memoryType() == MemoryType.VRAM) {
                                // loopback cannot move VRAM: held here, and a READ over it fails
                                VramList held = new VramList(name, list.count());
                                vramLists.add(held);
                                return held;
                            }
                        }
                        case "release" -> {
                            if (args[0] instanceof VramList held) {
                                vramLists.remove(held);
                                return null;
                            }
                            if (args[0] instanceof VramRead read) {
                                vramReads.remove(read);
                                return null;
                            }
                        }
                        case "postRead" -> {
                            if (args[0] instanceof VramList || args[2] instanceof VramList) {
                                if (!vramReadsComplete) {
                                    throw TransferException.of("postRead(" + name + ", VRAM)", -2);
                                }
                                VramRead read = new VramRead(((int[]) args[1]).length);
                                vramReads.add(read);
                                return read;
                            }
                        }
                        default -> { }
                    }
                    try {
                        return method.invoke(agent, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    /** Pools that register with the asking agent and record their lifecycle; addresses never reach memory. */
    public KvPools pools() {
        return pools(0);
    }

    /** Pools whose rank r is on CUDA device {@code firstDevice + r}. */
    public KvPools pools(int firstDevice) {
        return (agent, rank, label, bytes) -> {
            events.add("pool.open " + label);
            DeviceRegion region = agent.registerVram(label, 0x7f00_0000_0000L + rank * bytes, bytes,
                    firstDevice + rank);
            if (failNextPool != null) {
                RuntimeException e = failNextPool;
                failNextPool = null;
                agent.deregisterVram(region);
                throw e;
            }
            return new FakePool(agent, region, rank);
        };
    }

    public int registeredRegions() {
        return registered.size();
    }

    @Override
    public void close() {
        inner.close();
    }

    private final class FakePool implements DevicePool {
        private final DeviceMemory agent;
        private final DeviceRegion region;
        private final int rank;
        private boolean closed;

        FakePool(DeviceMemory agent, DeviceRegion region, int rank) {
            this.agent = agent;
            this.region = region;
            this.rank = rank;
        }

        @Override public long address() { return region.address(); }
        @Override public long bytes() { return region.length(); }
        @Override public int deviceOrdinal() { return region.deviceOrdinal(); }

        @Override
        public PoolShare share(int r) {
            byte[] handle = new byte[PoolShare.IPC_HANDLE_BYTES];
            handle[0] = (byte) (rank + 1);
            return new PoolShare(r, "GPU-00000000-0000-0000-0000-00000000000" + rank, bytes(), handle, 1000 + rank);
        }

        @Override
        public void zero(long offset, long length) {
            events.add("pool.zero " + region.label() + " " + offset + "+" + length);
        }

        @Override
        public void close() {
            if (closed) {
                events.add("pool.close again " + region.label());
                return;
            }
            agent.deregisterVram(region);
            closed = true;
            events.add("pool.free " + region.label());
        }
    }
}
