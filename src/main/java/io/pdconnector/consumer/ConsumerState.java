package io.pdconnector.consumer;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.kv.KvGroups;
import io.pdconnector.error.UnknownRequestException;
import io.pdconnector.memory.IndexPool;
import io.pdconnector.reference.ReferenceEngine;
import io.pdconnector.transfer.RankKv;
import java.security.SecureRandom;
import java.time.InstantSource;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What D's step-loop phases share, owned by the loop thread: the pulls and the lists that say which
 * phase each undecided one waits in, the peers, the decode ranks, the local block pool and the
 * {@link Quarantine} of what ended pulls left in flight. A pull is in at most one of {@link #queued},
 * {@link #reading} and {@link #checking}, and in none once decided.
 */
final class ConsumerState {

    final ConsumerConfig config;
    /** How a block's layers lie by KV cache group, parsed once: every pull's READs ask it. */
    final KvGroups groups;
    final InstantSource clock;
    final PullObserver observer;
    /** What each channel's READs take, learned on this loop ({@link ReadTransports}). */
    final ReadTransports transports;
    final LeaseVerification verification;
    final ConsumerCounters counters = new ConsumerCounters();
    final IndexPool blocks;
    final Quarantine quarantine;
    /** Blocks of released pulls a caller's thread was still reading ({@link PulledKv}). */
    final PinnedBlocks pinned;
    final ReferenceEngine reference;
    /** Filled when the loop opens; handshaken peers keep this list, so it is never replaced. */
    final List<ConsumerRank> ranks = new ArrayList<>();
    /** In access order: the first is the least recently used, the one evicted at pd.consumer.max-peers. */
    final Map<String, RemotePeer> peers = new LinkedHashMap<>(16, 0.75f, true);
    final Map<String, Pull> pulls = new LinkedHashMap<>();
    final ArrayDeque<Pull> queued = new ArrayDeque<>();
    final List<Pull> reading = new ArrayList<>();
    final List<Pull> checking = new ArrayList<>();
    /**
     * The last epoch stamped into blocks ({@link #giveBlocks}). It starts at a random point so that a restarted
     * D's epochs do not repeat its predecessor's: an engine still holding the old file's reply must not find
     * its epoch in the new file's table. Positive and below 2^53 for 2^52 pulls, as the nonces are: a JSON
     * reader that holds numbers as doubles reads the reply's {@code blocks_epoch} exactly.
     */
    private long epoch = (new SecureRandom().nextLong() >>> 12) + 1;

    ConsumerState(ConsumerConfig config, InstantSource clock, PullObserver observer) {
        this.config = config;
        this.clock = clock;
        this.observer = observer;
        this.transports = new ReadTransports(this, System.getenv());
        this.verification = new LeaseVerification(config.leaseVerification());
        this.blocks = new IndexPool("block", config.numBlocks());
        this.quarantine = new Quarantine(blocks, counters);
        this.pinned = new PinnedBlocks(blocks);
        this.reference = new ReferenceEngine(config.geometry());
        this.groups = config.geometry().groupLayout();
    }

    /**
     * The pull a command names; a declined pull is forgotten once answered (one D's ranks share, once
     * every rank has its answer), so it is unknown too.
     */
    Pull known(String requestId) {
        Pull pull = pulls.get(requestId);
        if (pull == null) {
            throw new UnknownRequestException("consumer", requestId);
        }
        return pull;
    }

    /**
     * Gives {@code pull} local blocks for its remote ones (none if it reads nothing), stamped with a new epoch
     * before anything is written into them; false, and nothing taken, if too few are free.
     */
    boolean giveBlocks(Pull pull) {
        int wanted = pull.remoteBlocks().length;
        int[] local = wanted == 0 ? new int[0] : blocks.allocate(wanted);
        if (local == null) {
            return false;
        }
        long stamped = ++epoch;
        ranks.forEach(r -> r.stampEpochs(local, stamped));
        pull.assignBlocks(local, stamped);
        return true;
    }

    /** A decided pull's KV, in place, for callers to read off the loop. */
    PulledKv exposeKv(Pull pull) {
        List<RankKv> kvs = new ArrayList<>(ranks.size());
        List<KvRegion> regions = new ArrayList<>(ranks.size());
        for (ConsumerRank rank : ranks) {
            kvs.add(rank.kv());
            regions.add(rank.region());
        }
        boolean stamped = !ranks.isEmpty() && ranks.stream().allMatch(ConsumerRank::hasEpochTable);
        return new PulledKv(kvs, regions, pull.localBlocks(), pull.tokens(), config.geometry().blockBytes(config.tpSize()),
                stamped ? pull.blocksEpoch() : 0);
    }

    /** Takes a pull out of whichever phase list holds it. */
    void unlist(Pull pull) {
        queued.remove(pull);
        reading.remove(pull);
        checking.remove(pull);
    }

    /** Frees a pull's local blocks, if it got any (once no caller reads them, {@link PinnedBlocks}), and forgets it. */
    void forget(Pull pull) {
        freeBlocks(pull);
        pulls.remove(pull.requestId());
    }

    /** Frees a pull's local blocks, if it still holds any; the pull itself stays known. */
    void freeBlocks(Pull pull) {
        int[] blocks = pull.dropBlocks();
        if (blocks != null) {
            pinned.free(pull.kv(), blocks);
        }
    }

    /**
     * Forgets a decided pull D's ranks share once every rank is done with it ({@link DecodeRanks#done});
     * a router's pull, or one a rank still holds, stays as it is.
     */
    void settle(Pull pull) {
        DecodeRanks ranks = pull.decodeRanks();
        if (ranks != null && pull.state().decided() && pulls.get(pull.requestId()) == pull
                && ranks.done(pull.state() != PullState.DECLINED)) {
            forget(pull);
        }
    }

    ConsumerSnapshot snapshot() {
        int readsInFlight = pulls.values().stream().mapToInt(Pull::readsInFlight).sum() + quarantine.reads();
        int slotReads = (int) peers.values().stream().flatMap(p -> p.slotChannels().stream())
                .filter(c -> c.inFlight() != null).count();
        return new ConsumerSnapshot(blocks.freeCount(), blocks.capacity(), pulls.size(), readsInFlight, slotReads,
                peers.size(), quarantine.blocks());
    }
}
