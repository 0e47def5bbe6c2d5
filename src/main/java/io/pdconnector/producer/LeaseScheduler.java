package io.pdconnector.producer;

import io.pdconnector.config.ProducerConfig;
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
import java.util.concurrent.TimeUnit;

/**
 * The producer's step loop. One thread owns every lease, block, slot and transfer agent; callers
 * go through {@link ProducerFacade} and await its futures with a deadline. A step runs its phases in
 * the order {@link #doWork} calls them; docs/internals.md, "Step loops", names each one's job (the one
 * list of them). It never blocks:
 * an exit queues a clear that the next step applies. A bug while it handles one request fails that
 * request alone and releases its lease ({@link RequestGuard}); the loop goes on.
 */
public final class LeaseScheduler implements StepWorker {

    private final ProducerState state;
    private final String name;
    private final TransferEngine engine;
    private final MetadataDirectory registry;
    private final LoopGauges gauges = new LoopGauges();
    private final CommandQueue<ProducerCommand> commands;
    private final LeaseExit exit;
    private final ProducerCommandHandler handler;
    private final Admission admission;
    private final SlotOps slotOps;
    private final Releaser releaser;
    private final Exporter exporter;
    private final NotificationInbox inbox;
    private final Reaper reaper;
    private final Credits credits;
    private final Optional<KvPools> pools;
    /** The ranks' VRAM pools as the engine's plugin opens them; written on the loop, read by the API. */
    private volatile List<PoolShare> poolShares = List.of();
    private boolean open;

    public LeaseScheduler(ProducerConfig config, TransferEngine engine,
            MetadataDirectory registry, InstantSource clock) {
        this(config, engine, registry, clock, LeaseObserver.NONE);
    }

    public LeaseScheduler(ProducerConfig config, TransferEngine engine,
            MetadataDirectory registry, InstantSource clock, LeaseObserver observer) {
        this(config, engine, registry, clock, observer, Optional.empty());
    }

    /** With {@code pools} (pd.kv.memory=vram), each rank's KV region is a VRAM pool made on this loop. */
    public LeaseScheduler(ProducerConfig config, TransferEngine engine,
            MetadataDirectory registry, InstantSource clock, LeaseObserver observer, Optional<KvPools> pools) {
        this.pools = pools;
        this.state = new ProducerState(config, clock, observer);
        this.name = "producer-" + config.engineId();
        this.engine = engine;
        this.registry = registry;
        this.commands = new CommandQueue<>(name(), config.commandQueueCapacity(), gauges);
        this.exit = new LeaseExit(state.ranks);
        RequestGuard guard = new RequestGuard(state, exit);
        this.exporter = new Exporter(state, guard);
        this.credits = new Credits(state, exporter, exit);
        this.handler = new ProducerCommandHandler(state, exporter, exit, guard, credits);
        this.admission = new Admission(state, guard);
        this.slotOps = new SlotOps(state.ranks, state.finishing);
        this.releaser = new Releaser(state);
        this.inbox = new NotificationInbox(state, exit, credits);
        this.reaper = new Reaper(state, exit, guard);
    }

    @Override
    public String name() {
        return name;
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

    public ProducerCounters counters() {
        return state.counters;
    }

    public ProducerConfig config() {
        return state.config;
    }

    /** For {@link ProducerFacade}, the only builder of commands. */
    CommandQueue<ProducerCommand> commands() {
        return commands;
    }

    /** Loop thread only: for the command handler's snapshot and for tests that step the loop. */
    ProducerState state() {
        return state;
    }

    /** All ranks or none: a rank that fails to open closes those opened before it. */
    @Override
    public void runsOn(Thread loop) {
        commands.wakes(loop);
    }

    /**
     * P parks at once when idle: its work comes as commands (which wake it) but for read notifications
     * and expiries, which may wait for the park. Spinning and yielding after each command, a few hundred
     * steps, cost a plugin's P more CPU than the commands did, on cores vLLM needs.
     */
    @Override
    public boolean spinsWhenIdle() {
        return false;
    }

    /**
     * The reaper's next deadline: an idle P parks no longer, so an expired lease's slot is zeroed when the
     * lease ends, not up to a park later. A grant's deadline (minutes) and a reader's notification still
     * wait for the park.
     */
    @Override
    public long nanosUntilDue() {
        long millis = state.leases.reaping().millisUntilDue(state.clock.millis());
        return millis == Long.MAX_VALUE ? Long.MAX_VALUE : TimeUnit.MILLISECONDS.toNanos(millis);
    }

    @Override
    public void open() {
        ProducerConfig config = state.config;
        state.nonces = new NonceSource(config.stateDir());
        createShmDir();
        state.ranks.addAll(Resources.openAll(config.tpSize(), r -> ProducerRank.open(engine, config, r, pools),
                ProducerRank::close));
        poolShares = state.ranks.stream().flatMap(r -> r.poolShare().stream()).toList();
        registry.publish(config.engineId(), state.ranks.stream().map(r -> r.metadata(config)).toList());
        open = true;
    }

    private void createShmDir() {
        if (state.config.kvShmDir() != null) {
            try {
                Files.createDirectories(state.config.kvShmDir());
            } catch (IOException e) {
                throw new UncheckedIOException("cannot create the KV file directory " + state.config.kvShmDir(), e);
            }
        }
    }

    @Override
    public int doWork() {
        requireOpen();
        long started = System.nanoTime();
        long now = state.clock.millis();
        int work = commands.drain(c -> handler.handle(c, now));
        work += admission.scheduleNew();
        work += credits.schedule(now);
        work += slotOps.applyOnEveryRank();
        work += releaser.releaseFinished();
        work += exporter.startWriting(now);
        work += credits.answer(now);
        work += inbox.drain(now);
        work += reaper.reap(now);
        work += credits.reclaim(now);
        report(work, started);
        return work;
    }

    private void report(int work, long startedNanos) {
        if (work > 0) {
            state.observer.step(name(), System.nanoTime() - startedNanos);
        }
        gauges.publish(state.blocks.capacity() - state.blocks.freeCount(), state.blocks.capacity(),
                state.slots.capacity() - state.slots.freeCount(), state.slots.capacity(),
                state.leases.size() - credits.unboundSlots(),
                commands.size());
    }

    /**
     * Shuts down: unanswered commands fail, every held lease's slot is zeroed before its blocks go,
     * the engine is withdrawn from the registry, and each rank closes its agent (which refuses if a
     * handle is still held).
     */
    @Override
    public void close() {
        if (!open) {
            return;
        }
        open = false;
        IllegalStateException closing = new IllegalStateException(name() + " is shutting down");
        failUnanswered(closing);
        registry.withdraw(state.config.engineId());
        credits.closeAll(closing);
        for (Lease lease : state.leases.all()) {
            exit.allRanks(lease);
            state.ranks.forEach(r -> r.applySlotOps(l -> { }));
        }
        poolShares = List.of();
        state.ranks.forEach(ProducerRank::close);
        state.ranks.clear();
    }

    private void failUnanswered(IllegalStateException closing) {
        commands.failAll(closing);
        state.pending.forEach(p -> p.reply().completeExceptionally(closing));
        state.scheduled.values().forEach(a -> a.reply().completeExceptionally(closing));
    }

    private void requireOpen() {
        if (!open) {
            throw new IllegalStateException(name() + " is not open");
        }
    }
}
