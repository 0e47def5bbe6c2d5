package io.pdconnector.consumer;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.kv.HeadSlice;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.kv.TpMapping;
import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.transfer.DescriptorList;
import io.pdconnector.transfer.RegisteredRegion;
import io.pdconnector.transfer.TransferAgent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A prefill engine D has handshaken with: its metadata loaded on the decode ranks that read it, and
 * its KV and slot memory prepared once as descriptor lists. {@link #release} is the one release path.
 */
final class RemotePeer {

    private final String engineId;
    private final List<HandshakeMetadata> ranks;
    private final TpMapping mapping;
    private final List<SliceChannel> slices = new ArrayList<>();
    private final List<SlotChannel> slotChannels = new ArrayList<>();
    /** (decode rank, prefill rank) to the remote agent name loaded on that decode rank's agent. */
    private final Map<List<Integer>, String> loaded = new LinkedHashMap<>();
    private final List<ConsumerRank> decodeRanks;
    private final Set<Pull> undecided = new LinkedHashSet<>();
    private long nextHeartbeatAt = Long.MAX_VALUE;

    private RemotePeer(String engineId, List<HandshakeMetadata> ranks, TpMapping mapping,
            List<ConsumerRank> decodeRanks) {
        this.engineId = engineId;
        this.ranks = ranks;
        this.mapping = mapping;
        this.decodeRanks = decodeRanks;
    }

    /** Checks compatibility, loads metadata and prepares every list; on failure releases what it took. */
    static RemotePeer handshake(String engineId, List<HandshakeMetadata> metadata, List<ConsumerRank> decodeRanks,
            ConsumerConfig config, LeaseVerification verification) {
        for (HandshakeMetadata m : metadata) {
            m.requireCompatible(config.geometry(), HandshakeMetadata.CONNECTOR_VERSION);
            m.requireWithin(config.maxPeerBlocks(), config.maxPeerDescriptors());
        }
        TpMapping mapping = new TpMapping(config.geometry(), metadata.size(), config.tpSize());
        for (HeadSlice s : mapping.slices()) { // every list's length is bounded before anything is loaded
            HandshakeMetadata m = metadata.get(s.prefillRank());
            m.descriptorCount(s.runsPerBlock(config.geometry(), m.tpSize(), config.tpSize()),
                    config.maxPeerDescriptors());
        }
        RemotePeer peer = new RemotePeer(engineId, metadata, mapping, decodeRanks);
        try {
            peer.prepare(config, verification);
            return peer;
        } catch (RuntimeException e) {
            peer.release();
            throw e;
        }
    }

    private void prepare(ConsumerConfig config, LeaseVerification verification) {
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
            name = rank.agent().loadRemoteMetadata(ranks.get(q).agentMetadata());
            loaded.put(key, name);
        }
        return name;
    }

    private SliceChannel prepareSlice(HeadSlice s, ConsumerRank rank, String remoteAgent, ConsumerConfig config) {
        ModelGeometry g = config.geometry();
        HandshakeMetadata m = ranks.get(s.prefillRank());
        int runs = s.runsPerBlock(g, m.tpSize(), config.tpSize());
        long runBytes = s.runBytes(g, m.tpSize(), config.tpSize());
        DescriptorList remote = new DescriptorList(m.descriptorCount(runs, config.maxPeerDescriptors()));
        for (int b = 0; b < m.numBlocks(); b++) {
            for (int r = 0; r < runs; r++) {
                remote.add(m.kvBase() + b * m.blockBytes() + s.prefillOffset(g, m.tpSize(), config.tpSize(), r),
                        runBytes);
            }
        }
        long localBlockBytes = g.blockBytes(config.tpSize());
        DescriptorList local = new DescriptorList(Math.multiplyExact(config.numBlocks(), runs));
        for (int b = 0; b < config.numBlocks(); b++) {
            for (int r = 0; r < runs; r++) {
                local.add(rank.kv().address() + b * localBlockBytes
                        + s.decodeOffset(g, m.tpSize(), config.tpSize(), r), runBytes);
            }
        }
        TransferAgent agent = rank.agent();
        var preparedRemote = agent.prepareRemote(remoteAgent, remote);
        try {
            return new SliceChannel(s, rank, remoteAgent, runs, preparedRemote, agent.prepareLocal(local));
        } catch (RuntimeException e) {
            agent.release(preparedRemote);
            throw e;
        }
    }

    private static SlotChannel prepareSlots(int q, ConsumerRank reader, String remoteAgent, HandshakeMetadata m,
            int capacity) {
        TransferAgent agent = reader.agent();
        var remote = agent.prepareRemote(remoteAgent, DescriptorList.contiguous(m.slotBase(), Long.BYTES,
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

    /** Whether {@code current} (from the registry) is what this peer was built from; false after a restart. */
    boolean sameIncarnation(List<HandshakeMetadata> current) {
        if (current.size() != ranks.size()) {
            return false;
        }
        for (int i = 0; i < ranks.size(); i++) {
            if (!Arrays.equals(current.get(i).agentMetadata(), ranks.get(i).agentMetadata())) {
                return false;
            }
        }
        return true;
    }

    Set<Pull> undecided() {
        return undecided;
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
