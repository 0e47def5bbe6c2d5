package io.pdconnector.producer;

import io.pdconnector.config.ProducerConfig;
import io.pdconnector.protocol.MetadataDirectory;
import io.pdconnector.transfer.TransferEngine;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;

/**
 * A producer step loop driven by a test thread, which steps it and so is its loop thread: requests
 * go through the {@link #facade}, as in production, and the loop-thread-only views of its state
 * ({@link #lease}, {@link #slotValue}, {@link #snapshot}) are read between steps.
 */
public final class ProducerFixture {

    /** Only the blocking facade calls wait; a test that steps the loop uses the {@code submitX} futures. */
    private static final Duration DEADLINE = Duration.ofSeconds(10);

    private final LeaseScheduler scheduler;
    private final ProducerFacade facade;

    public ProducerFixture(LeaseScheduler scheduler) {
        this.scheduler = scheduler;
        this.facade = new ProducerFacade(scheduler, DEADLINE);
    }

    /** A new producer, not yet open. */
    public ProducerFixture(ProducerConfig config, TransferEngine engine, MetadataDirectory registry,
            InstantSource clock) {
        this(new LeaseScheduler(config, engine, registry, clock));
    }

    public LeaseScheduler scheduler() {
        return scheduler;
    }

    public ProducerFacade facade() {
        return facade;
    }

    public void open() {
        scheduler.open();
    }

    public int doWork() {
        return scheduler.doWork();
    }

    public void close() {
        scheduler.close();
    }

    public String name() {
        return scheduler.name();
    }

    public ProducerConfig config() {
        return scheduler.config();
    }

    public ProducerCounters counters() {
        return scheduler.counters();
    }

    /** Between steps only: the facade's {@code submitSnapshot} is the way from any other thread. */
    public ProducerSnapshot snapshot() {
        return scheduler.state().snapshot();
    }

    /** Between steps only: the lease {@code requestId} holds, or null. */
    public Lease lease(String requestId) {
        return scheduler.state().lease(requestId);
    }

    /** Between steps only: whether P's block {@code block} is taken (by a lease or a grant). */
    public boolean blockTaken(int block) {
        return scheduler.state().blocks.isTaken(block);
    }

    /** Between steps only: what {@code rank}'s slot holds right now. */
    public long slotValue(int rank, int slot) {
        return scheduler.state().slotValue(rank, slot);
    }

    /** Between steps only: handles (regions, lists, READs) held by each rank's agent. */
    public List<Integer> openHandles() {
        return scheduler.state().openHandles();
    }
}
