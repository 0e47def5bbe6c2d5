package io.pdconnector.consumer;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.config.LoadFailurePolicy;
import io.pdconnector.error.StateConflictException;
import io.pdconnector.error.UnknownRequestException;
import io.pdconnector.loop.CommandQueue;
import io.pdconnector.loop.LoopGauges;
import io.pdconnector.loop.StepWorker;
import io.pdconnector.memory.IndexPool;
import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.protocol.InvalidKvTransferParamsException;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.protocol.MetadataDirectory;
import io.pdconnector.protocol.RequestIds;
import io.pdconnector.reference.ReferenceEngine;
import io.pdconnector.transfer.TransferEngine;
import java.time.InstantSource;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The consumer's step loop, a sibling of the producer's {@code LeaseScheduler}: one thread owns
 * every pull, local block, READ, peer and transfer agent. Each step:
 * <ol>
 * <li>drain commands: a new pull handshakes if needed, is checked against the peer, and starts
 *     heartbeating at once;</li>
 * <li>send due heartbeats, batched per remote engine;</li>
 * <li>poll block READs; a pull whose READs are all terminal (L9) goes on to the slot check;</li>
 * <li>post one slot READ per remote rank for every pull that got there (L5), spin on it (bounded),
 *     compare, and decide: notify with the nonce only after a match (L6), else decline (L7);</li>
 * <li>give queued pulls local blocks and post their block READs, without notification;</li>
 * <li>time out pulls past their deadline.</li>
 * </ol>
 * Block READs posted in a step are first polled in the next.
 */
public final class PullScheduler implements StepWorker {

    private final ConsumerConfig config;
    private final TransferEngine engine;
    private final MetadataDirectory registry;
    private final PullObserver observer;
    private final LoopGauges gauges = new LoopGauges();
    private final InstantSource clock;
    private final CommandQueue<ConsumerCommand> commands;
    private final ReferenceEngine reference;
    private final ConsumerCounters counters = new ConsumerCounters();
    private final NotificationOutbox notices;
    private final IndexPool blocks;
    private final List<ConsumerRank> ranks = new ArrayList<>();
    private final Map<String, RemotePeer> peers = new LinkedHashMap<>();
    private final Map<String, Pull> pulls = new LinkedHashMap<>();
    private final ArrayDeque<Pull> queued = new ArrayDeque<>();
    private final List<Pull> reading = new ArrayList<>();
    private final List<Pull> checking = new ArrayList<>();
    private boolean open;

    public PullScheduler(ConsumerConfig config, TransferEngine engine, MetadataDirectory registry,
            InstantSource clock) {
        this(config, engine, registry, clock, PullObserver.NONE);
    }

    public PullScheduler(ConsumerConfig config, TransferEngine engine, MetadataDirectory registry,
            InstantSource clock, PullObserver observer) {
        this.observer = observer;
        this.config = config;
        this.engine = engine;
        this.registry = registry;
        this.clock = clock;
        this.commands = new CommandQueue<>(name(), config.commandQueueCapacity());
        this.reference = new ReferenceEngine(config.geometry());
        this.blocks = new IndexPool("block", config.numBlocks());
        this.notices = new NotificationOutbox(config, counters);
    }

    @Override
    public String name() {
        return "consumer-" + config.engineId();
    }

    public LoopGauges gauges() {
        return gauges;
    }

    public ConsumerCounters counters() {
        return counters;
    }

    public ConsumerConfig config() {
        return config;
    }

    // ---- caller side: any thread -------------------------------------------------------------

    /**
     * Pulls the KV of {@code tokens} that P describes in {@code params}. Bad input throws here and
     * changes nothing; what needs the peer (unknown engine, version, ranges) fails the future.
     */
    public CompletableFuture<PullOutcome> submitPull(String requestId, int[] tokens, KvTransferParams params) {
        RequestIds.require(requestId);
        if (params == null) {
            throw new InvalidKvTransferParamsException("kv_transfer_params is missing");
        }
        params.validateForPull();
        PullValidation.requirePrompt(config, tokens, params);
        return commands.submit(reply -> new ConsumerCommand.Start(requestId, tokens.clone(), params, reply));
    }

    public CompletableFuture<Void> submitAbort(String requestId) {
        return commands.submit(reply -> new ConsumerCommand.Abort(RequestIds.require(requestId), reply));
    }

    /** Decode no longer needs the pulled KV: frees its local blocks. */
    public CompletableFuture<Void> submitFinish(String requestId) {
        return commands.submit(reply -> new ConsumerCommand.Finish(RequestIds.require(requestId), reply));
    }

    /** A decided pull's KV bytes: for each local block, each rank's slice in rank order. */
    public CompletableFuture<byte[]> submitReadKv(String requestId) {
        return commands.submit(reply -> new ConsumerCommand.ReadKv(RequestIds.require(requestId), reply));
    }

    /** CRC-32C of what {@link #submitReadKv} would return. */
    public CompletableFuture<Long> submitKvChecksum(String requestId) {
        return commands.submit(reply -> new ConsumerCommand.KvChecksum(RequestIds.require(requestId), reply));
    }

    /** Whether a pull's local blocks hold exactly the reference engine's KV of its prompt. */
    public CompletableFuture<Boolean> submitMatchesReference(String requestId) {
        return commands.submit(reply -> new ConsumerCommand.MatchesReference(RequestIds.require(requestId), reply));
    }

    /** Where a pull is; a declined pull is forgotten once answered (fail policy), so it is unknown here. */
    public CompletableFuture<PullStatus> submitStatus(String requestId) {
        return commands.submit(reply -> new ConsumerCommand.Status(RequestIds.require(requestId), reply));
    }

    public CompletableFuture<ConsumerSnapshot> submitSnapshot() {
        return commands.submit(reply -> new ConsumerCommand.Snapshot(reply));
    }

    // ---- loop side ------------------------------------------------------------------------------

    @Override
    public void open() {
        try {
            for (int r = 0; r < config.tpSize(); r++) {
                ranks.add(ConsumerRank.open(engine, config, r));
            }
        } catch (RuntimeException e) {
            ranks.forEach(ConsumerRank::close);
            ranks.clear();
            throw e;
        }
        open = true;
    }

    @Override
    public int doWork() {
        if (!open) {
            throw new IllegalStateException(name() + " is not open");
        }
        long started = System.nanoTime();
        long now = clock.millis();
        int work = commands.drain(c -> handle(c, now));
        work += notices.sendHeartbeats(peers.values(), now);
        work += pollReading();
        work += checkSlots(now);
        work += startQueued();
        work += expire(now);
        if (work > 0) {
            observer.step(name(), System.nanoTime() - started);
        }
        gauges.publish(blocks.capacity() - blocks.freeCount(), blocks.capacity(), 0, 0, pulls.size(), commands.size());
        return work;
    }

    private void handle(ConsumerCommand command, long now) {
        switch (command) {
            case ConsumerCommand.Start s -> arrive(s, now);
            case ConsumerCommand.Abort a -> abort(a);
            case ConsumerCommand.Finish f -> finish(f);
            case ConsumerCommand.MatchesReference m -> m.reply().complete(matchesReference(m.requestId()));
            case ConsumerCommand.ReadKv r -> readKv(r);
            case ConsumerCommand.KvChecksum c -> kvChecksum(c);
            case ConsumerCommand.Status s -> status(s, now);
            case ConsumerCommand.Snapshot s -> s.reply().complete(snapshot());
        }
    }

    private void arrive(ConsumerCommand.Start s, long now) {
        try {
            if (pulls.containsKey(s.requestId())) {
                throw new StateConflictException(s.requestId(), "request " + s.requestId() + " is already being pulled");
            }
            RemotePeer peer = peerFor(s.params().remoteEngineId());
            PullValidation.requireFitsPeer(config, s.params(), peer);
            Pull pull = new Pull(s.requestId(), s.tokens(), s.params(), peer, now + config.pullTimeout().toMillis(),
                    s.reply());
            pulls.put(pull.requestId(), pull);
            queued.add(pull);
            if (!config.leaseVerification() || s.params().hasLease()) {
                peer.startHeartbeating(pull, now);
            }
        } catch (RuntimeException e) {
            s.reply().completeExceptionally(e);
        }
    }

    /**
     * The handshake, on first contact or after the peer restarted. A restarted peer's agents reuse
     * their names, so the old incarnation is dropped first: its undecided pulls fail (their source
     * memory is gone) and its names are invalidated before the new metadata is loaded under them.
     */
    private RemotePeer peerFor(String engineId) {
        List<HandshakeMetadata> current = registry.lookup(engineId).orElseThrow(() ->
                new InvalidKvTransferParamsException("unknown remote_engine_id " + engineId
                        + ": no such engine in the registry"));
        RemotePeer known = peers.get(engineId);
        if (known != null && known.sameIncarnation(current)) {
            return known;
        }
        if (known != null) {
            drop(known);
        }
        RemotePeer peer = RemotePeer.handshake(engineId, current, ranks, config);
        peers.put(engineId, peer);
        counters.handshakes.incrementAndGet();
        return peer;
    }

    private int pollReading() {
        int n = 0;
        for (Pull pull : List.copyOf(reading)) {
            if (!pull.pollReads()) {
                continue;
            }
            reading.remove(pull);
            n++;
            if (pull.anyReadFailed()) {
                decide(pull, DeclineReason.TRANSFER_FAILED);
            } else if (!config.leaseVerification()) {
                decide(pull, null);
            } else {
                pull.moveTo(PullState.CHECKING_SLOTS, null);
                checking.add(pull);
            }
        }
        return n;
    }

    private int checkSlots(long now) {
        int n = 0;
        for (RemotePeer peer : peers.values()) {
            for (SlotChannel channel : peer.slotChannels()) {
                // a READ whose pulls were decided early (another rank's slot READ failed) is still polled to its end
                if (channel.inFlight() != null || !checking.isEmpty()) {
                    n += SlotChecker.step(channel, checking, peer, now, config, counters);
                }
            }
        }
        for (Pull pull : List.copyOf(checking)) {
            if (pull.slotsDecidable()) {
                checking.remove(pull);
                decide(pull, pull.slotVerdict());
                n++;
            }
        }
        return n;
    }

    private int startQueued() {
        int n = 0;
        while (!queued.isEmpty()) {
            Pull pull = queued.peek();
            int[] local = blocks.allocate(pull.params().blockIds().length);
            if (local == null) {
                break;
            }
            queued.poll();
            pull.assignBlocks(local);
            n++;
            if (config.leaseVerification() && !pull.params().hasLease()) {
                decide(pull, DeclineReason.NO_LEASE);
                continue;
            }
            for (SliceChannel channel : pull.peer().slices()) {
                pull.addRead(BlockRead.post(channel, local, pull.params().blockIds(), observer));
            }
            pull.moveTo(PullState.READING, null);
            reading.add(pull);
        }
        return n;
    }

    private int expire(long now) {
        int n = 0;
        for (Pull pull : List.copyOf(pulls.values())) {
            if (!pull.state().decided() && now >= pull.deadlineMillis()) {
                decide(pull, DeclineReason.TIMEOUT);
                n++;
            }
        }
        return n;
    }

    /**
     * The one place a pull is decided. A clean pull notifies P (with the nonce when verifying);
     * anything else releases the READs, counts lease-check failures (L7) and applies the policy.
     */
    private void decide(Pull pull, DeclineReason reason) {
        pull.releaseReads();
        queued.remove(pull);
        reading.remove(pull);
        checking.remove(pull);
        pull.peer().stopHeartbeating(pull);
        observer.pullDecided(reason, reason != null && config.failurePolicy() == LoadFailurePolicy.RECOMPUTE
                && reason != DeclineReason.ABORTED && pull.localBlocks() != null);
        if (reason == null) {
            notices.notifyRead(pull);
            pull.moveTo(PullState.RECEIVED, null);
            counters.received.incrementAndGet();
        } else {
            if (reason.leaseCheckFailure()) {
                counters.leaseCheckFailures.incrementAndGet();
            }
            applyPolicy(pull, reason);
        }
        pull.reply().complete(pull.outcome());
    }

    private void applyPolicy(Pull pull, DeclineReason reason) {
        boolean recompute = config.failurePolicy() == LoadFailurePolicy.RECOMPUTE && reason != DeclineReason.ABORTED
                && pull.localBlocks() != null;
        if (recompute) {
            ranks.forEach(r -> r.recompute(reference, pull.localBlocks(), pull.tokens(), config.tpSize()));
            pull.moveTo(PullState.RECOMPUTED, reason);
            counters.recomputed.incrementAndGet();
            return;
        }
        if (pull.localBlocks() != null) {
            blocks.free(pull.localBlocks());
        }
        pull.moveTo(PullState.DECLINED, reason);
        pulls.remove(pull.requestId());
        counters.declined.incrementAndGet();
    }

    private void abort(ConsumerCommand.Abort a) {
        Pull pull = pulls.get(a.requestId());
        if (pull == null) {
            a.reply().completeExceptionally(new UnknownRequestException("consumer", a.requestId()));
            return;
        }
        if (pull.state().decided()) {
            release(pull);
        } else {
            decide(pull, DeclineReason.ABORTED);
        }
        a.reply().complete(null);
    }

    private void finish(ConsumerCommand.Finish f) {
        Pull pull = pulls.get(f.requestId());
        if (pull == null) {
            f.reply().completeExceptionally(new UnknownRequestException("consumer", f.requestId()));
            return;
        }
        if (!pull.state().decided()) {
            f.reply().completeExceptionally(new StateConflictException(f.requestId(), "request " + f.requestId() + " is still "
                    + pull.state() + "; abort it instead"));
            return;
        }
        release(pull);
        f.reply().complete(null);
    }

    private void release(Pull pull) {
        blocks.free(pull.localBlocks());
        pulls.remove(pull.requestId());
    }

    /**
     * Copies a decided pull's KV out, block by block and, within a block, rank by rank (each rank's
     * slice in the in-block layout of {@code ReferenceEngine}). A declined pull has no KV to give.
     */
    private void readKv(ConsumerCommand.ReadKv r) {
        Pull pull = pulls.get(r.requestId());
        if (pull == null) {
            r.reply().completeExceptionally(new UnknownRequestException("consumer", r.requestId()));
            return;
        }
        if (pull.state() != PullState.RECEIVED && pull.state() != PullState.RECOMPUTED) {
            r.reply().completeExceptionally(new StateConflictException(r.requestId(), "request " + r.requestId() + " is "
                    + pull.state() + "; only received or recomputed KV can be read"));
            return;
        }
        int[] local = pull.localBlocks();
        long rankBlock = config.geometry().blockBytes(config.tpSize());
        byte[] out = new byte[Math.toIntExact(rankBlock * local.length * ranks.size())];
        int at = 0;
        for (int block : local) {
            for (ConsumerRank rank : ranks) {
                java.lang.foreign.MemorySegment.copy(rank.kv().segment(), java.lang.foreign.ValueLayout.JAVA_BYTE,
                        block * rankBlock, out, at, (int) rankBlock);
                at += (int) rankBlock;
            }
        }
        r.reply().complete(out);
    }

    /** CRC-32C over the same bytes, in the same order, as {@link #readKv}, without copying them. */
    private void kvChecksum(ConsumerCommand.KvChecksum c) {
        Pull pull = pulls.get(c.requestId());
        if (pull == null || pull.localBlocks() == null) {
            c.reply().completeExceptionally(new UnknownRequestException("consumer", c.requestId()));
            return;
        }
        long rankBlock = config.geometry().blockBytes(config.tpSize());
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        for (int block : pull.localBlocks()) {
            for (ConsumerRank rank : ranks) {
                crc.update(rank.kv().segment().asSlice(block * rankBlock, rankBlock).asByteBuffer());
            }
        }
        c.reply().complete(crc.getValue());
    }

    private void status(ConsumerCommand.Status s, long now) {
        Pull pull = pulls.get(s.requestId());
        if (pull == null) {
            s.reply().completeExceptionally(new UnknownRequestException("consumer", s.requestId()));
            return;
        }
        s.reply().complete(pull.status(now));
    }

    private Boolean matchesReference(String requestId) {
        Pull pull = pulls.get(requestId);
        if (pull == null || pull.localBlocks() == null) {
            return false;
        }
        return ranks.stream().allMatch(r -> r.matches(reference, pull.localBlocks(), pull.tokens(), config.tpSize()));
    }

    private void drop(RemotePeer peer) {
        for (Pull pull : List.copyOf(pulls.values())) {
            if (pull.peer() == peer && !pull.state().decided()) {
                decide(pull, DeclineReason.TRANSFER_FAILED);
            }
        }
        peers.remove(peer.engineId());
        peer.release();
    }

    /** Loop thread only (or a test driving {@link #doWork}); other threads use {@link #submitSnapshot}. */
    public ConsumerSnapshot snapshot() {
        int readsInFlight = pulls.values().stream().mapToInt(Pull::readsInFlight).sum();
        int slotReads = (int) peers.values().stream().flatMap(p -> p.slotChannels().stream())
                .filter(c -> c.inFlight() != null).count();
        return new ConsumerSnapshot(blocks.freeCount(), blocks.capacity(), pulls.size(), readsInFlight, slotReads,
                peers.size());
    }

    /** Shuts down: unanswered commands fail, undecided pulls are aborted, peers and agents released. */
    @Override
    public void close() {
        if (!open) {
            return;
        }
        open = false;
        IllegalStateException closing = new IllegalStateException(name() + " is shutting down");
        commands.failAll(closing);
        for (Pull pull : List.copyOf(pulls.values())) {
            if (!pull.state().decided()) {
                pull.releaseReads();
                pull.reply().completeExceptionally(closing);
            }
        }
        pulls.clear();
        peers.values().forEach(RemotePeer::release);
        peers.clear();
        ranks.forEach(ConsumerRank::close);
        ranks.clear();
    }
}
