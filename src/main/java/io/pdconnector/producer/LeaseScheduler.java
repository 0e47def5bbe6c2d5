package io.pdconnector.producer;

import io.pdconnector.config.ProducerConfig;
import io.pdconnector.error.InvalidInputException;
import io.pdconnector.error.StateConflictException;
import io.pdconnector.error.UnavailableException;
import io.pdconnector.error.UnknownRequestException;
import io.pdconnector.loop.CommandQueue;
import io.pdconnector.loop.LoopGauges;
import io.pdconnector.loop.StepWorker;
import io.pdconnector.memory.IndexPool;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.protocol.MetadataDirectory;
import io.pdconnector.protocol.RequestIds;
import io.pdconnector.reference.ReferenceEngine;
import io.pdconnector.transfer.TransferEngine;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * The producer's step loop. One thread owns every lease, block, slot and transfer agent; callers
 * only {@code submit*} and await the returned future with a deadline. Each step:
 * <ol>
 * <li>drain commands (bounded);</li>
 * <li>schedule new requests (prefills and engine reservations): blocks, slot and nonce (no free
 *     slot: no lease fields, L4);</li>
 * <li>every rank applies slot clears, then slot writes (L2), and reports finished-sending only for
 *     leases whose slot it zeroed (L3);</li>
 * <li>free blocks and return the slot of leases every rank finished (L3, L4);</li>
 * <li>newly scheduled requests start WRITING: a prefill's KV is written by the reference engine and
 *     its lease exported at once; an engine's reservation is answered and waits for its finish;</li>
 * <li>drain notifications: heartbeats extend live leases only (L8), read notifications with a
 *     stale nonce are ignored and counted;</li>
 * <li>sweep every lease for expiry (L8), and every reservation for its finish deadline.</li>
 * </ol>
 * A step never blocks: exits queue a clear that the next step applies. An engine's finish exports
 * its lease exactly as a prefill does, through the same L2 check.
 */
public final class LeaseScheduler implements StepWorker {

    private final ProducerConfig config;
    private final TransferEngine engine;
    private final MetadataDirectory registry;
    private final LeaseObserver observer;
    private final LoopGauges gauges = new LoopGauges();
    private final InstantSource clock;
    private final CommandQueue<ProducerCommand> commands;
    private final ReferenceEngine reference;
    private final ProducerCounters counters = new ProducerCounters();
    private final NotificationInbox inbox;
    private final IndexPool blocks;
    private final IndexPool slots;
    private final LeaseTable leases;
    private final List<ProducerCommand.Admission> pending = new ArrayList<>();
    private final Map<Lease, ProducerCommand.Admission> scheduled = new LinkedHashMap<>();
    private final Set<Lease> finishing = new LinkedHashSet<>();
    private final List<ProducerRank> ranks = new ArrayList<>();
    private NonceSource nonces;
    private boolean open;

    public LeaseScheduler(ProducerConfig config, TransferEngine engine,
            MetadataDirectory registry, InstantSource clock) {
        this(config, engine, registry, clock, LeaseObserver.NONE);
    }

    public LeaseScheduler(ProducerConfig config, TransferEngine engine,
            MetadataDirectory registry, InstantSource clock, LeaseObserver observer) {
        this.observer = observer;
        this.config = config;
        this.engine = engine;
        this.registry = registry;
        this.clock = clock;
        this.commands = new CommandQueue<>(name(), config.commandQueueCapacity());
        this.reference = new ReferenceEngine(config.geometry());
        this.blocks = new IndexPool("block", config.numBlocks());
        this.slots = new IndexPool("slot", config.leaseVerification() ? config.effectiveLeaseSlots() : 0);
        this.leases = new LeaseTable(config.tpSize());
        this.inbox = new NotificationInbox(leases, counters, config.heartbeatExtensionMillis(), this::exitRank);
    }

    @Override
    public String name() {
        return "producer-" + config.engineId();
    }

    public LoopGauges gauges() {
        return gauges;
    }

    public ProducerCounters counters() {
        return counters;
    }

    public ProducerConfig config() {
        return config;
    }

    // ---- caller side: any thread -------------------------------------------------------------

    /** Prefills {@code tokens} for a remote decoder; completes with the params to forward to D. */
    public CompletableFuture<KvTransferParams> submitPrefill(String requestId, int[] tokens) {
        RequestIds.require(requestId);
        requirePrompt(tokens);
        return commands.submit(reply -> new ProducerCommand.Prefill(requestId, tokens.clone(), reply));
    }

    /**
     * Reserves blocks (and a slot and nonce) for an engine that writes {@code numTokens} tokens of
     * KV itself; completes once every rank's slot holds the nonce, with where to write.
     */
    public CompletableFuture<Reservation> submitReserve(String requestId, int numTokens) {
        RequestIds.require(requestId);
        requireFits(numTokens);
        return commands.submit(reply -> new ProducerCommand.Reserve(requestId, numTokens, reply));
    }

    /** Copies an engine's uploaded KV into a reserved request's blocks (layout: {@link Reservation}). */
    public CompletableFuture<Void> submitWriteKv(String requestId, byte[] kv) {
        RequestIds.require(requestId);
        if (kv == null) {
            throw InvalidInputException.of("an upload needs a body");
        }
        return commands.submit(reply -> new ProducerCommand.WriteKv(requestId, kv, reply));
    }

    /** The engine wrote a reserved request's KV: exports its lease, as a prefill's is exported. */
    public CompletableFuture<KvTransferParams> submitFinish(String requestId) {
        RequestIds.require(requestId);
        return commands.submit(reply -> new ProducerCommand.Finish(requestId, reply));
    }

    public CompletableFuture<LeaseStatus> submitStatus(String requestId) {
        RequestIds.require(requestId);
        return commands.submit(reply -> new ProducerCommand.Status(requestId, reply));
    }

    /** Releases a request's lease now, as if it expired; an engine's unfinished request too. */
    public CompletableFuture<Void> submitAbort(String requestId) {
        RequestIds.require(requestId);
        return commands.submit(reply -> new ProducerCommand.Abort(requestId, reply));
    }

    public CompletableFuture<ProducerSnapshot> submitSnapshot() {
        return commands.submit(reply -> new ProducerCommand.Snapshot(reply));
    }

    private void requirePrompt(int[] tokens) {
        if (tokens == null) {
            throw InvalidInputException.of("a prompt needs at least one token");
        }
        requireFits(tokens.length);
        for (int t : tokens) {
            if (t < 0) {
                throw InvalidInputException.of("token ids must not be negative, got " + t);
            }
        }
    }

    private void requireFits(int numTokens) {
        if (numTokens < 1) {
            throw InvalidInputException.of("a request needs at least one token, got " + numTokens);
        }
        long capacity = (long) config.numBlocks() * config.geometry().blockTokens();
        if (numTokens > capacity) {
            throw InvalidInputException.of("a prompt of " + numTokens + " tokens exceeds this instance's "
                    + capacity + "-token KV capacity");
        }
    }

    // ---- loop side: the step-loop thread only --------------------------------------------------

    @Override
    public void open() {
        nonces = new NonceSource(config.stateDir());
        createShmDir();
        try {
            for (int r = 0; r < config.tpSize(); r++) {
                ranks.add(ProducerRank.open(engine, config, r));
            }
        } catch (RuntimeException e) {
            ranks.forEach(ProducerRank::close);
            ranks.clear();
            throw e;
        }
        registry.publish(config.engineId(), ranks.stream().map(r -> r.metadata(config)).toList());
        open = true;
    }

    private void createShmDir() {
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
        requireOpen();
        long started = System.nanoTime();
        long now = clock.millis();
        int work = commands.drain(c -> handle(c, now));
        work += scheduleNew();
        for (ProducerRank rank : ranks) {
            work += rank.applySlotOps(finishing::add);
        }
        work += releaseFinished();
        work += startWriting(now);
        for (ProducerRank rank : ranks) {
            work += rank.drainNotifications((from, message) -> inbox.accept(rank.rank(), from, message, now));
        }
        work += reapExpired(now);
        if (work > 0) {
            observer.step(name(), System.nanoTime() - started);
        }
        gauges.publish(blocks.capacity() - blocks.freeCount(), blocks.capacity(), slots.capacity() - slots.freeCount(),
                slots.capacity(), leases.size(), commands.size());
        return work;
    }

    private void handle(ProducerCommand command, long now) {
        switch (command) {
            case ProducerCommand.Admission a -> pending.add(a);
            case ProducerCommand.WriteKv w -> writeKv(w);
            case ProducerCommand.Finish f -> finish(f, now);
            case ProducerCommand.Status s -> status(s, now);
            case ProducerCommand.Abort a -> abort(a);
            case ProducerCommand.Snapshot s -> s.reply().complete(snapshot());
        }
    }

    private int scheduleNew() {
        int n = 0;
        for (ProducerCommand.Admission a : pending) {
            if (n >= config.maxNumSeqs()) {
                a.reply().completeExceptionally(UnavailableException.noFreeBlocks(
                        "more than max_num_seqs=" + config.maxNumSeqs() + " new requests in one step; retry"));
                continue;
            }
            schedule(a);
            n++;
        }
        pending.clear();
        return n;
    }

    private void schedule(ProducerCommand.Admission a) {
        if (leases.contains(a.requestId())) {
            a.reply().completeExceptionally(new StateConflictException(a.requestId(), "request " + a.requestId()
                    + " still holds a lease; an id can be reused only after its lease is freed"));
            return;
        }
        int[] blockIds = blocks.allocate(config.geometry().blocksFor(a.numTokens()));
        if (blockIds == null) {
            a.reply().completeExceptionally(UnavailableException.noFreeBlocks("no free KV blocks for "
                    + a.numTokens() + " tokens (" + blocks.freeCount() + " of " + blocks.capacity() + " free)"));
            return;
        }
        OptionalInt slot = slots.acquire();
        long nonce = slot.isPresent() ? nonces.next() : 0;
        Lease lease = leases.reserve(a.requestId(), blockIds, a.numTokens(), slot.orElse(Lease.NO_SLOT), nonce);
        if (lease.hasSlot()) {
            ranks.forEach(r -> r.queueWrite(lease));
        }
        scheduled.put(lease, a);
    }

    private int releaseFinished() {
        int n = 0;
        for (Lease lease : finishing) {
            if (lease.allRanksFinished()) {
                blocks.free(lease.blockIds());
                if (lease.hasSlot()) {
                    slots.release(lease.slot());
                }
                if (lease.exportedAtMillis() >= 0) {
                    observer.leaseReleased(clock.millis() - lease.exportedAtMillis());
                }
                lease.moveTo(LeaseState.FREED);
                leases.remove(lease);
                n++;
            }
        }
        finishing.removeIf(l -> l.state() == LeaseState.FREED);
        return n;
    }

    /**
     * Requests scheduled this step had their slots written by every rank (L2, checked here) and
     * start WRITING. A prefill gets the reference engine's KV and is exported at once; an engine's
     * reservation gets zeroed blocks and its answer, and is exported by its finish.
     */
    private int startWriting(long now) {
        int n = scheduled.size();
        scheduled.forEach((lease, admission) -> {
            if (lease.hasSlot()) {
                requireSlotWrittenOnEveryRank(lease);
                lease.moveTo(LeaseState.SLOT_WRITTEN);
            }
            lease.startWriting(now + config.reservationTimeout().toMillis());
            switch (admission) {
                case ProducerCommand.Prefill p -> {
                    ranks.forEach(r -> r.writeKv(reference, lease, p.tokens(), config.tpSize()));
                    p.reply().complete(export(lease, now));
                }
                case ProducerCommand.Reserve r -> {
                    ranks.forEach(rank -> rank.zeroBlocks(lease));
                    r.reply().complete(new Reservation(lease.requestId(), lease.numTokens(), lease.blockIds(),
                            lease.hasSlot(), ranks.getFirst().blockBytes(),
                            ranks.stream().map(ProducerRank::region).toList()));
                }
            }
        });
        scheduled.clear();
        return n;
    }

    /** The one way out of WRITING but release: the lease clock starts and the params go out. */
    private KvTransferParams export(Lease lease, long now) {
        if (lease.hasSlot()) {
            requireSlotWrittenOnEveryRank(lease);
        } else {
            counters.exportsWithoutSlot.incrementAndGet();
        }
        lease.startClock(now, now + config.leaseDuration().toMillis());
        lease.moveTo(LeaseState.EXPORTED);
        counters.leasesExported.incrementAndGet();
        return paramsOf(lease);
    }

    private void finish(ProducerCommand.Finish f, long now) {
        Lease lease = writing(f.requestId(), "finished", f.reply());
        if (lease != null) {
            f.reply().complete(export(lease, now));
        }
    }

    /** An upload must cover every block of every rank exactly; anything else changes nothing. */
    private void writeKv(ProducerCommand.WriteKv w) {
        Lease lease = writing(w.requestId(), "written", w.reply());
        if (lease == null) {
            return;
        }
        long blockBytes = ranks.getFirst().blockBytes();
        long expected = lease.blockIds().length * blockBytes * ranks.size();
        if (w.kv().length != expected) {
            w.reply().completeExceptionally(InvalidInputException.of("an upload for " + w.requestId() + " is "
                    + expected + " bytes (" + lease.blockIds().length + " blocks x " + ranks.size() + " ranks x "
                    + blockBytes + " bytes), got " + w.kv().length));
            return;
        }
        ranks.forEach(r -> r.copyUpload(lease, w.kv(), ranks.size()));
        w.reply().complete(null);
    }

    /**
     * The request's lease if its KV may still be written (WRITING); otherwise fails {@code reply}
     * and returns null: unknown is 404, any other state a conflict, since once exported a decoder
     * may be reading the blocks and once releasing they are no longer the request's.
     */
    private Lease writing(String requestId, String what, CompletableFuture<?> reply) {
        Lease lease = leases.find(requestId);
        if (lease == null) {
            reply.completeExceptionally(new UnknownRequestException("producer", requestId));
            return null;
        }
        if (lease.state() != LeaseState.WRITING) {
            reply.completeExceptionally(new StateConflictException(requestId, "request " + requestId + " is "
                    + lease.state() + ": its KV can be " + what + " only while it is " + LeaseState.WRITING
                    + (lease.state() == LeaseState.EXPORTED ? " (it was finished already)" : "")));
            return null;
        }
        return lease;
    }

    private void status(ProducerCommand.Status s, long now) {
        Lease lease = leases.find(s.requestId());
        if (lease == null) {
            s.reply().completeExceptionally(new UnknownRequestException("producer", s.requestId()));
            return;
        }
        s.reply().complete(LeaseStatus.of(lease, now, ranks.size()));
    }

    /** L2, checked where it matters: no lease is exported unless every rank's slot holds its nonce. */
    private void requireSlotWrittenOnEveryRank(Lease lease) {
        for (ProducerRank rank : ranks) {
            if (rank.slotValue(lease.slot()) != lease.nonce()) {
                throw new IllegalStateException("rank " + rank.rank() + " slot " + lease.slot() + " does not hold the"
                        + " nonce of lease " + lease.requestId() + " at export");
            }
        }
    }

    private KvTransferParams paramsOf(Lease lease) {
        List<Integer> ids = Arrays.stream(lease.blockIds()).boxed().toList();
        return new KvTransferParams(true, false, config.engineId(), lease.requestId(), List.of(ids), config.host(),
                config.port(), config.tpSize(), lease.numTokens(), KvTransferParams.PULL,
                lease.hasSlot() ? lease.slot() : null, lease.hasSlot() ? lease.nonce() : null, Map.of());
    }

    /** L8: every lease, in any order; and a reservation whose engine missed its finish deadline. */
    private int reapExpired(long now) {
        int n = 0;
        for (Lease lease : leases.all()) {
            if (!lease.anyRankHeld()) {
                continue;
            }
            if (lease.expired(now)) {
                exitAllRanks(lease);
                counters.leasesExpired.incrementAndGet();
                n++;
            } else if (lease.abandoned(now)) {
                exitAllRanks(lease);
                counters.reservationsAbandoned.incrementAndGet();
                n++;
            }
        }
        return n;
    }

    private void abort(ProducerCommand.Abort a) {
        Lease lease = leases.find(a.requestId());
        if (lease == null) {
            a.reply().completeExceptionally(new UnknownRequestException("producer", a.requestId()));
            return;
        }
        if (lease.anyRankHeld()) {
            exitAllRanks(lease);
            counters.leasesAborted.incrementAndGet();
        }
        a.reply().complete(null);
    }

    private void exitAllRanks(Lease lease) {
        for (ProducerRank rank : ranks) {
            exitRank(lease, rank.rank());
        }
    }

    /** L3: the rank's slot clear is queued; it reports finished-sending only after applying it. */
    private void exitRank(Lease lease, int rank) {
        if (lease.beginRankExit(rank)) {
            ranks.get(rank).queueClear(lease);
            if (lease.state() != LeaseState.RELEASING) {
                lease.moveTo(LeaseState.RELEASING);
            }
        }
    }

    /** Loop thread only (or a test driving {@link #doWork}): other threads use {@link #submitSnapshot}. */
    public ProducerSnapshot snapshot() {
        Map<String, LeaseState> states = new LinkedHashMap<>();
        leases.all().forEach(l -> states.put(l.requestId(), l.state()));
        return new ProducerSnapshot(blocks.freeCount(), blocks.capacity(), slots.freeCount(), leases.size(),
                ranks.stream().map(ProducerRank::nonZeroSlots).toList(), states);
    }

    /** Loop thread only: the lease a request holds, or null. */
    public Lease lease(String requestId) {
        return leases.find(requestId);
    }

    /** Loop thread only: what {@code rank}'s slot holds right now. */
    public long slotValue(int rank, int slot) {
        return ranks.get(rank).slotValue(slot);
    }

    /** Loop thread only: handles (regions, lists, READs) held by each rank's agent. */
    public List<Integer> openHandles() {
        return ranks.stream().map(ProducerRank::openHandles).toList();
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
        commands.failAll(closing);
        pending.forEach(p -> p.reply().completeExceptionally(closing));
        scheduled.values().forEach(a -> a.reply().completeExceptionally(closing));
        registry.withdraw(config.engineId());
        for (Lease lease : leases.all()) {
            exitAllRanks(lease);
            ranks.forEach(r -> r.applySlotOps(l -> { }));
        }
        ranks.forEach(ProducerRank::close);
        ranks.clear();
    }

    private void requireOpen() {
        if (!open) {
            throw new IllegalStateException(name() + " is not open");
        }
    }
}
