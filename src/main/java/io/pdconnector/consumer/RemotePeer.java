package io.pdconnector.consumer;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.kv.HeadSlice;
import io.pdconnector.kv.KvGroups;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.kv.TpMapping;
import io.pdconnector.error.IncompatiblePeerException;
import io.pdconnector.error.PeerFailureException;
import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.protocol.ProducerIncarnation;
import io.pdconnector.transfer.DescriptorList;
import io.pdconnector.transfer.MemoryType;
import io.pdconnector.transfer.RegisteredRegion;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

/**
 * A prefill engine D has handshaken with: its metadata loaded on the decode ranks that read it, and
 * its KV and slot memory prepared once as descriptor lists. {@link #release} is the one release path.
 */
final class RemotePeer {

    private final String engineId;
    private final String epoch;
    private final List<HandshakeMetadata> ranks;
    private final TpMapping mapping;
    private final List<SliceChannel> slices = new ArrayList<>();
    private final List<SlotChannel> slotChannels = new ArrayList<>();
    /** (decode rank, prefill rank) to the remote agent name loaded on that decode rank's agent. */
    private final Map<List<Integer>, String> loaded = new LinkedHashMap<>();
    private final List<ConsumerRank> decodeRanks;
    private final Set<Pull> undecided = new LinkedHashSet<>();
    private long nextHeartbeatAt = Long.MAX_VALUE;
    private Predicate<String> loadedByAnother = name -> false;
    private final Map<SliceChannel, ReadTransports.ChannelTransport> transports = new IdentityHashMap<>();
    private String refusal;

    private RemotePeer(ProducerIncarnation incarnation, TpMapping mapping, List<ConsumerRank> decodeRanks) {
        this.engineId = incarnation.engineId();
        this.epoch = incarnation.epoch();
        this.ranks = incarnation.ranks();
        this.mapping = mapping;
        this.decodeRanks = decodeRanks;
    }

    /**
     * Checks compatibility and agent names, loads metadata and prepares every list; on failure releases
     * what it took, but never a name {@code loadedByAnother} says a handshaken peer holds.
     */
    static RemotePeer handshake(ProducerIncarnation incarnation, List<ConsumerRank> decodeRanks,
            ConsumerConfig config, LeaseVerification verification, Predicate<String> loadedByAnother) {
        List<HandshakeMetadata> metadata = incarnation.ranks();
        for (HandshakeMetadata m : metadata) {
            m.requireCompatible(config.geometry(), HandshakeMetadata.CONNECTOR_VERSION);
            m.requireWithin(config.maxPeerBlocks(), config.maxPeerDescriptors());
            requireOwnAgentName(m);
        }
        if (config.geometry().replicated() && metadata.size() != 1) {
            throw new IncompatiblePeerException("MLA producer " + incarnation.engineId() + " publishes "
                    + metadata.size() + " ranks; an MLA producer holds its latent on one rank");
        }
        TpMapping mapping = new TpMapping(config.geometry(), metadata.size(), config.tpSize());
        for (HeadSlice s : mapping.slices()) { // every list's length is bounded before anything is loaded
            HandshakeMetadata m = metadata.get(s.prefillRank());
            m.descriptorCount(s.runsPerBlock(config.geometry(), m.tpSize(), config.tpSize()),
                    config.maxPeerDescriptors());
        }
        RemotePeer peer = new RemotePeer(incarnation, mapping, decodeRanks);
        try {
            peer.prepare(config, verification, loadedByAnother);
            return peer;
        } catch (RuntimeException e) {
            peer.release();
            throw e;
        }
    }

    /** An agent name is bound to its engine: rank q of engine e publishes agent e-pq, and no other engine may. */
    private static void requireOwnAgentName(HandshakeMetadata m) {
        String own = ProducerIncarnation.agentName(m.engineId(), m.rank());
        if (!own.equals(m.agentName())) {
            throw new IncompatiblePeerException("peer " + m.engineId() + " rank " + m.rank() + " publishes NIXL agent "
                    + m.agentName() + ", but its agent must be " + own + ": an agent name belongs to one engine");
        }
    }

    private void prepare(ConsumerConfig config, LeaseVerification verification, Predicate<String> loadedByAnother) {
        this.loadedByAnother = loadedByAnother;
        for (HeadSlice s : mapping.slices()) {
            ConsumerRank rank = decodeRanks.get(s.decodeRank());
            String remote = load(rank, s.prefillRank());
            slices.add(prepareSlice(s, rank, remote, config));
        }
        if (verification.checksSlots()) {
            for (int q = 0; q < ranks.size(); q++) {
                HandshakeMetadata m = ranks.get(q);
                if (m.hasSlots()) {
                    ConsumerRank reader = decodeRanks.get(mapping.slotReaderOf(q));
                    slotChannels.add(prepareSlots(q, reader, load(reader, q), m, config.slotChecksPerRead()));
                }
            }
        }
    }

    /** Loads prefill rank {@code q}'s metadata on {@code rank}'s agent once. */
    private String load(ConsumerRank rank, int q) {
        List<Integer> key = List.of(rank.rank(), q);
        String name = loaded.get(key);
        if (name == null) {
            String declared = ranks.get(q).agentName();
            try {
                name = rank.agent().loadRemoteMetadata(ranks.get(q).agentMetadata());
            } catch (TransferException e) {
                // NIXL could not load it (the producer unreachable, frozen or gone): the peer's failure, not ours
                throw new PeerFailureException("decode rank " + rank.rank() + " cannot load producer " + engineId
                        + " rank " + q + " (NIXL agent " + declared + "): " + e.getMessage(), e);
            }
            if (!name.equals(declared)) {
                if (!loadedByAnother.test(name)) {
                    rank.agent().invalidateRemote(name);
                }
                throw new IncompatiblePeerException("peer " + engineId + " rank " + q + " publishes the metadata of"
                        + " NIXL agent " + name + " as its agent " + declared + "; an agent name belongs to one engine");
            }
            loaded.put(key, name);
        }
        return name;
    }

    private SliceChannel prepareSlice(HeadSlice s, ConsumerRank rank, String remoteAgent, ConsumerConfig config) {
        ModelGeometry g = config.geometry();
        HandshakeMetadata m = ranks.get(s.prefillRank());
        int ptp = m.tpSize();
        int dtp = config.tpSize();
        int runs = s.runsPerBlock(g, ptp, dtp);
        long[] runBytes = new long[runs];
        long[] prefillOffsets = new long[runs];
        long[] decodeOffsets = new long[runs];
        for (int r = 0; r < runs; r++) {
            runBytes[r] = s.runBytes(g, ptp, dtp, r);
            prefillOffsets[r] = s.prefillOffset(g, ptp, dtp, r);
            decodeOffsets[r] = s.decodeOffset(g, ptp, dtp, r);
        }
        // P's KV and D's may each be host or GPU memory; NIXL reads across the two
        DescriptorList remote = new DescriptorList(m.descriptorCount(runs, config.maxPeerDescriptors()),
                m.kvInVram() ? MemoryType.VRAM : MemoryType.DRAM, m.kvDevice());
        for (int b = 0; b < m.numBlocks(); b++) {
            for (int r = 0; r < runs; r++) {
                remote.add(m.kvBase() + b * m.blockBytes() + prefillOffsets[r], runBytes[r]);
            }
        }
        long localBlockBytes = g.blockBytes(dtp);
        DescriptorList local = new DescriptorList(Math.multiplyExact(config.numBlocks(), runs),
                rank.kv().memoryType(), rank.kv().deviceId());
        for (int b = 0; b < config.numBlocks(); b++) {
            for (int r = 0; r < runs; r++) {
                local.add(rank.kv().address() + b * localBlockBytes + decodeOffsets[r], runBytes[r]);
            }
        }
        KvGroups groups = g.groupLayout();
        int[] runsOfSegments = new int[groups.segments() + 1];
        for (int k = 0; k <= groups.segments(); k++) {
            runsOfSegments[k] = s.runsOfSegments(g, ptp, dtp, k);
        }
        long minReadBytes = Arrays.stream(runBytes).min().orElseThrow();
        TransferAgent agent = rank.agent();
        var preparedRemote = agent.prepareRemote(remoteAgent, remote);
        try {
            return new SliceChannel(s, rank, remoteAgent, runs, runsOfSegments, minReadBytes, preparedRemote,
                    agent.prepareLocal(local));
        } catch (RuntimeException e) {
            agent.release(preparedRemote);
            throw e;
        }
    }

    private static SlotChannel prepareSlots(int q, ConsumerRank reader, String remoteAgent, HandshakeMetadata m,
            int capacity) {
        TransferAgent agent = reader.agent();
        var remote = agent.prepareRemote(remoteAgent, DescriptorList.leaseSlots(m.slotBase(),
                m.slotCount()));
        RegisteredRegion landing = null;
        try {
            landing = agent.allocate("slot-landing-" + m.engineId() + "-" + q, (long) capacity * Long.BYTES);
            var local = agent.prepareLocal(DescriptorList.contiguous(landing.address(), Long.BYTES, capacity));
            return new SlotChannel(q, reader, remote, landing, local, capacity);
        } catch (RuntimeException e) {
            agent.release(remote);
            if (landing != null) {
                agent.deregister(landing);
            }
            throw e;
        }
    }

    String engineId() {
        return engineId;
    }

    /** The registry epoch this peer was handshaken at; another epoch is another start of the producer. */
    String epoch() {
        return epoch;
    }

    /** The remote agent names loaded for this peer (on any decode rank). */
    Collection<String> loadedNames() {
        return loaded.values();
    }

    List<HandshakeMetadata> ranks() {
        return ranks;
    }

    TpMapping mapping() {
        return mapping;
    }

    List<SliceChannel> slices() {
        return slices;
    }

    List<SlotChannel> slotChannels() {
        return slotChannels;
    }

    Set<Pull> undecided() {
        return undecided;
    }

    /** What {@code channel}'s READs were reported to take (made on first use). */
    ReadTransports.ChannelTransport transport(SliceChannel channel) {
        return transports.computeIfAbsent(channel, c -> new ReadTransports.ChannelTransport());
    }

    /** From now on no pull of this incarnation is served: {@code why} is the sentence its callers get. */
    void refuse(String why) {
        if (refusal == null) {
            refusal = why;
        }
    }

    /** Why this incarnation is refused, or null. */
    String refusal() {
        return refusal;
    }

    /** A newly heartbeated request is covered at once, not an interval later. */
    void startHeartbeating(Pull pull, long now) {
        if (undecided.isEmpty()) {
            nextHeartbeatAt = now;
        }
        undecided.add(pull);
    }

    void stopHeartbeating(Pull pull) {
        undecided.remove(pull);
    }

    boolean heartbeatDue(long now) {
        return !undecided.isEmpty() && now >= nextHeartbeatAt;
    }

    void heartbeatSent(long now, long intervalMillis) {
        nextHeartbeatAt = now + intervalMillis;
    }

    /** Releases everything: slot channels, slice lists, then the loaded peers. */
    void release() {
        slotChannels.forEach(SlotChannel::release);
        slotChannels.clear();
        slices.forEach(SliceChannel::release);
        slices.clear();
        loaded.forEach((key, name) -> decodeRanks.get(key.getFirst()).agent().invalidateRemote(name));
        loaded.clear();
    }
}
