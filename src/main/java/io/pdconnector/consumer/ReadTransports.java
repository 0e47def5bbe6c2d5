package io.pdconnector.consumer;

import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.transfer.MemoryType;
import io.pdconnector.transfer.ReadPath;
import io.pdconnector.transfer.TransferAgent;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import org.jboss.logging.Logger;

/**
 * Which transport each decode rank's READs of each prefill rank's KV really take, as the transfer library says it
 * chose it ({@link TransferAgent#readPaths}), asked right after each post, on the step loop that posts: a table
 * the library prints while a READ is posted is that READ's. UCX prints one table per endpoint configuration and
 * memory kinds, so a peer whose READs print none shares an earlier peer's selection: it takes what the earlier
 * paths of its agent agree on, or is undetermined where they differ. Each channel's transport is logged and
 * reported when first known and whenever it changes; a READ of a producer's GPU memory over anything but a GPU
 * transport refuses its peer ({@link HostPathRefusal}) unless {@code pd.kv.vram-host-path=allow}.
 */
final class ReadTransports {

    private static final Logger LOG = Logger.getLogger(ReadTransports.class);

    private final ConsumerState state;
    private final Map<String, String> environment;
    /** Per local agent, every path it was reported, for the channels whose READs print none. */
    private final Map<String, List<ReadPath>> seen = new HashMap<>();

    ReadTransports(ConsumerState state, Map<String, String> environment) {
        this.state = state;
        this.environment = Map.copyOf(environment);
    }

    /**
     * After a block READ on {@code channel} was posted (whether or not the post succeeded). With nothing new
     * reported for a channel already known, as after almost every post, it allocates nothing.
     */
    void posted(RemotePeer peer, SliceChannel channel) {
        TransferAgent agent = channel.rank().agent();
        List<ReadPath> drained = drain(agent);
        ChannelTransport transport = peer.transport(channel);
        if (drained.isEmpty() && transport.known()) {
            return;
        }
        HandshakeMetadata source = peer.ranks().get(channel.slice().prefillRank());
        String local = ReadPath.memoryName(channel.rank().kv().memoryType());
        String remote = ReadPath.memoryName(source.kvInVram() ? MemoryType.VRAM : MemoryType.DRAM);
        List<ReadPath> fresh = new ArrayList<>();
        for (ReadPath p : drained) {
            if (p.localMemory().equals(local) && p.remoteMemory().equals(remote)) {
                fresh.add(p);
            }
        }
        boolean changed;
        if (!fresh.isEmpty()) {
            changed = transport.reported(fresh, channel.minReadBytes());
        } else if (!transport.known()) {
            changed = transport.shared(candidates(agent.name(), local, remote), channel.minReadBytes());
        } else {
            changed = false;
        }
        if (changed) {
            publish(peer, channel, transport, local, remote);
        }
    }

    /** After a slot READ was posted on {@code agent}: what it printed is that agent's, for later channels. */
    void postedSlots(TransferAgent agent) {
        drain(agent);
    }

    private List<ReadPath> drain(TransferAgent agent) {
        List<ReadPath> reported = agent.readPaths();
        if (!reported.isEmpty()) {
            seen.computeIfAbsent(agent.name(), a -> new ArrayList<>()).addAll(reported);
        }
        return reported;
    }

    private List<ReadPath> candidates(String agent, String local, String remote) {
        List<ReadPath> out = new ArrayList<>();
        for (ReadPath p : seen.getOrDefault(agent, List.of())) {
            if (p.localMemory().equals(local) && p.remoteMemory().equals(remote)) {
                out.add(p);
            }
        }
        return out;
    }

    private void publish(RemotePeer peer, SliceChannel channel, ChannelTransport transport, String local,
            String remote) {
        int d = channel.rank().rank();
        int q = channel.slice().prefillRank();
        state.observer.readTransport(peer.engineId(), d, q, remote, transport.label());
        LOG.infof("decode rank %d reads producer %s rank %d's KV (%s memory) into %s memory over %s", d,
                peer.engineId(), q, remote, local, transport.describe());
        // P's KV in GPU memory is what a GPU transport serves; from P's host memory any path starts on the host
        if (!remote.equals("cuda") || !transport.hostPath() || state.config.vramHostPathAllowed()) {
            return;
        }
        String why = HostPathRefusal.sentence(peer.engineId(), q, d, transport, environment);
        peer.refuse(why);
        LOG.error(why);
    }

    /** What one channel's READs were reported to take; mutable, owned by its peer, used on the step loop only. */
    static final class ChannelTransport {
        private final Set<ReadPath> paths = new LinkedHashSet<>();
        private SortedSet<String> transports;
        private boolean shared;
        private boolean undetermined;
        private String reach = "";

        boolean known() {
            return transports != null || undetermined;
        }

        /** Paths printed by this channel's own post; true if what it takes changed. */
        boolean reported(List<ReadPath> fresh, long minBytes) {
            paths.addAll(fresh);
            shared = false;
            undetermined = false;
            return settle(minBytes);
        }

        /** No path printed for this channel: the agent's earlier ones, if they agree. */
        boolean shared(List<ReadPath> earlier, long minBytes) {
            Set<SortedSet<String>> distinct = new LinkedHashSet<>();
            earlier.forEach(p -> distinct.add(p.transportsFrom(minBytes)));
            if (distinct.size() != 1) {
                undetermined = !earlier.isEmpty();
                paths.addAll(earlier);
                return undetermined;
            }
            paths.addAll(earlier);
            shared = true;
            return settle(minBytes);
        }

        private boolean settle(long minBytes) {
            SortedSet<String> now = new TreeSet<>();
            Set<String> reaches = new LinkedHashSet<>();
            for (ReadPath p : paths) {
                now.addAll(p.transportsFrom(minBytes));
                reaches.add(p.reach());
            }
            reach = String.join("/", reaches);
            boolean changed = !now.equals(transports);
            transports = now;
            return changed;
        }

        /** The metric's label: the transports joined with {@code +}, or {@code undetermined}. */
        String label() {
            return undetermined || transports.isEmpty() ? "undetermined" : String.join("+", transports);
        }

        /** A transport that is no GPU transport serves these READs. */
        boolean hostPath() {
            return !undetermined && transports != null && !transports.isEmpty()
                    && !transports.stream().allMatch(ReadPath::gpuDirect);
        }

        String reach() {
            return reach;
        }

        /** For the log: the transports, how far the peer is, and each route as the library named it. */
        String describe() {
            StringBuilder b = new StringBuilder(label());
            if (undetermined) {
                b.append(" (the agent's earlier READs of these memory kinds took different transports, and these"
                        + " printed none of their own)");
            }
            b.append(" (").append(reach.isEmpty() ? "reach unknown" : reach);
            if (shared) {
                b.append(", as the agent's earlier READs: UCX selects once per endpoint configuration");
            }
            b.append("; UCX: ");
            List<String> routes = new ArrayList<>();
            for (ReadPath p : paths) {
                for (ReadPath.Route r : p.routes()) {
                    routes.add(r.protocol() + " " + String.join(" and ", r.lanes()) + " for " + range(r));
                }
            }
            b.append(String.join("; ", new LinkedHashSet<>(routes))).append(')');
            return b.toString();
        }

        private static String range(ReadPath.Route r) {
            return r.minBytes() + ".." + (r.maxBytes() == Long.MAX_VALUE ? "inf" : Long.toString(r.maxBytes()))
                    + " B";
        }
    }
}
