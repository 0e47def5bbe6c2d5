package io.pdconnector.consumer;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.loop.CommandQueue;
import io.pdconnector.loop.LoopGauges;
import io.pdconnector.loop.Resources;
import io.pdconnector.loop.StepWorker;
import io.pdconnector.protocol.MetadataDirectory;
import io.pdconnector.transfer.KvPools;
import io.pdconnector.transfer.PoolShare;
import io.pdconnector.transfer.TransferEngine;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.time.InstantSource;
import java.util.List;
import java.util.Optional;
import org.jboss.logging.Logger;

/**
 * The consumer's step loop, a sibling of the producer's {@code LeaseScheduler}: one thread owns
 * every pull, local block, READ, peer and transfer agent. Each step runs its phases in the order
 * {@link #doWork} calls them; docs/internals.md, "Step loops", names each one's job and the D-side
 * lease rule it keeps (the one list of them).
 * Block READs are first polled in the step that posted them. Callers reach the loop only through
 * {@link ConsumerFacade}.
 */
public final class PullScheduler implements StepWorker {

    private static final Logger LOG = Logger.getLogger(PullScheduler.class);

    private final ConsumerState state;
    private final TransferEngine engine;
    private final CommandQueue<ConsumerCommand> commands;
    private final LoopGauges gauges = new LoopGauges();
    private final ConsumerCommandHandler handler;
    private final NotificationOutbox notices;
    private final ReadPoller reads;
    private final SlotChecker slots;
    private final PullStarter starter;
    private final Expiry expiry;
    private final Decider decider;
    private final Optional<KvPools> pools;
    /** The ranks' VRAM pools as the engine's plugin opens them; written on the loop, read by the API. */
    private volatile List<PoolShare> poolShares = List.of();
    private boolean open;

    public PullScheduler(ConsumerConfig config, TransferEngine engine, MetadataDirectory registry,
            InstantSource clock) {
        this(config, engine, registry, clock, PullObserver.NONE);
    }

    public PullScheduler(ConsumerConfig config, TransferEngine engine, MetadataDirectory registry,
            InstantSource clock, PullObserver observer) {
        this(config, engine, registry, clock, observer, Optional.empty());
    }

    /** With {@code pools} (pd.kv.memory=vram), each rank's KV region is a VRAM pool made on this loop. */
    public PullScheduler(ConsumerConfig config, TransferEngine engine, MetadataDirectory registry,
            InstantSource clock, PullObserver observer, Optional<KvPools> pools) {
        this.pools = pools;
        this.state = new ConsumerState(config, clock, observer);
        this.engine = engine;
        this.commands = new CommandQueue<>(name(), config.commandQueueCapacity(), gauges);
        this.notices = new NotificationOutbox(state);
        Decider decider = new Decider(state, notices);
        this.decider = decider;
        PeerHandshake handshake = new PeerHandshake(state, registry, decider);
        SharedPulls shared = new SharedPulls(state, decider);
        this.handler = new ConsumerCommandHandler(state, new Arrival(state, handshake, decider, shared), handshake,
                decider, new KvReadout(state), shared);
        this.reads = new ReadPoller(state, decider);
        this.slots = new SlotChecker(state, decider);
        this.starter = new PullStarter(state, decider);
        this.expiry = new Expiry(state, decider);
    }

    @Override
    public String name() {
        return "consumer-" + state.config.engineId();
    }

    public LoopGauges gauges() {
        return gauges;
    }

    /**
     * Each rank's VRAM pool as the engine's plugin opens it, in rank order, while the loop is open; empty with
     * pd.kv.memory=dram. Any thread.
     */
    public List<PoolShare> poolShares() {
        return poolShares;
    }

    public ConsumerCounters counters() {
        return state.counters;
    }

    ConsumerConfig config() {
        return state.config;
    }

    CommandQueue<ConsumerCommand> commands() {
        return commands;
    }

    /** Loop thread only (or a test driving {@link #doWork}); other threads ask through the facade. */
    ConsumerSnapshot snapshot() {
        return state.snapshot();
    }

    @Override
    public void runsOn(Thread loop) {
        commands.wakes(loop);
    }

    @Override
    public void open() {
        ConsumerConfig config = state.config;
        createShmDir(config);
        state.ranks.addAll(Resources.openAll(config.tpSize(), r -> ConsumerRank.open(engine, config, r, pools),
                ConsumerRank::close));
        poolShares = state.ranks.stream().flatMap(r -> r.poolShare().stream()).toList();
        open = true;
    }

    private static void createShmDir(ConsumerConfig config) {
        if (config.kvShmDir() != null) {
            try {
                Files.createDirectories(config.kvShmDir());
            } catch (IOException e) {
                throw new UncheckedIOException("cannot create the KV file directory " + config.kvShmDir(), e);
            }
        }
    }

    @Override
    public int doWork() {
        if (!open) {
            throw new IllegalStateException(name() + " is not open");
        }
        long started = System.nanoTime();
        long now = state.clock.millis();
        int work = commands.drain(c -> handler.handle(c, now));
        // started before the poll: over CMA a READ is done within its post, so a pull can be read,
        // slot-checked and decided in the step its command arrived in
        work += starter.startQueued();
        work += reads.poll();
        work += state.quarantine.poll();
        work += state.pinned.poll();
        work += slots.check(now);
        // after the decisions: a pull decided in its arrival step needs no heartbeat (P hears its read
        // notification instead), and one still undecided is heartbeated in that same step
        work += sendHeartbeats(now);
        work += expiry.expire(now);
        if (work > 0) {
            state.observer.step(name(), System.nanoTime() - started);
        }
        publishGauges();
        return work;
    }

    /** Per peer, so a bug while heartbeating one peer fails only the pulls that peer's heartbeats cover. */
    private int sendHeartbeats(long now) {
        int n = 0;
        for (RemotePeer peer : List.copyOf(state.peers.values())) {
            n += decider.guard(peer::undecided, () -> notices.sendHeartbeats(List.of(peer), now));
        }
        return n;
    }

    private void publishGauges() {
        gauges.publish(state.blocks.capacity() - state.blocks.freeCount(), state.blocks.capacity(), 0, 0,
                state.pulls.size(), commands.size());
        gauges.publishQuarantined(state.quarantine.blocks());
    }

    /**
     * Shuts down: unanswered commands fail, undecided pulls are aborted, READs still in flight
     * cancelled (the memory they write goes with the loop), peers and agents released.
     */
    @Override
    public void close() {
        if (!open) {
            return;
        }
        open = false;
        IllegalStateException closing = new IllegalStateException(name() + " is shutting down");
        commands.failAll(closing);
        for (Pull pull : List.copyOf(state.pulls.values())) {
            if (!pull.state().decided()) {
                if (!pull.cancelReads()) {
                    LOG.errorf("a READ of pull %s could not be cancelled at shutdown", pull.requestId());
                }
                pull.failCallers(closing);
            }
        }
        state.pulls.clear();
        state.quarantine.cancelAll();
        state.peers.values().forEach(RemotePeer::release);
        state.peers.clear();
        poolShares = List.of();
        state.ranks.forEach(ConsumerRank::close);
        state.ranks.clear();
    }
}
