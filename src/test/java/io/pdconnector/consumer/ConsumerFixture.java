package io.pdconnector.consumer;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.protocol.MetadataDirectory;
import io.pdconnector.transfer.TransferEngine;
import java.time.Duration;
import java.time.InstantSource;
import java.util.HashMap;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;

/**
 * A consumer whose loop the test thread steps by hand: commands go through the facade (their
 * futures complete as the test steps), and what only the loop thread may look at is read here.
 */
public final class ConsumerFixture {

    /** Only the blocking calls wait; a test stepping by hand awaits the futures itself. */
    private static final Duration DEADLINE = Duration.ofSeconds(10);

    private final PullScheduler scheduler;
    private final ConsumerFacade facade;
    /** The prompt of the latest pull of each request id, as the caller sent it. */
    private final Map<String, int[]> prompts = new HashMap<>();

    public ConsumerFixture(ConsumerConfig config, TransferEngine engine, MetadataDirectory registry,
            InstantSource clock) {
        this(new PullScheduler(config, engine, registry, clock));
    }

    /** A consumer on a scheduler the test built, not yet open. */
    public ConsumerFixture(PullScheduler scheduler) {
        this.scheduler = scheduler;
        this.facade = new ConsumerFacade(scheduler, DEADLINE);
    }

    public ConsumerFacade facade() {
        return facade;
    }

    public String name() {
        return scheduler.name();
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

    /** Taken on the calling thread, so only between steps of a loop this thread steps. */
    public ConsumerSnapshot snapshot() {
        return scheduler.snapshot();
    }

    public ConsumerConfig config() {
        return scheduler.config();
    }

    public ConsumerCounters counters() {
        return scheduler.counters();
    }

    public CompletableFuture<PullOutcome> submitPull(String requestId, int[] tokens, KvTransferParams params) {
        CompletableFuture<PullOutcome> pull = facade.submitPull(requestId, tokens, params);
        prompts.put(requestId, tokens.clone());
        return pull;
    }

    /** As {@link #submitPull(String, int[], KvTransferParams)}, asked for by D's rank {@code decodeRank}. */
    public CompletableFuture<PullOutcome> submitPull(String requestId, int[] tokens, KvTransferParams params,
            int decodeRank) {
        CompletableFuture<PullOutcome> pull = facade.submitPull(requestId, tokens, params, OptionalInt.of(decodeRank));
        prompts.put(requestId, tokens.clone());
        return pull;
    }

    /**
     * The prompt the latest {@link #submitPull} of {@code requestId} sent: what a caller checking the
     * pulled KV against the reference engine knows, as D's loop offers no such check.
     */
    public int[] prompt(String requestId) {
        int[] tokens = prompts.get(requestId);
        if (tokens == null) {
            throw new IllegalStateException("no pull of " + requestId + " was submitted through this fixture");
        }
        return tokens.clone();
    }

    public CompletableFuture<Void> submitAbort(String requestId) {
        return facade.submitAbort(requestId);
    }

    public CompletableFuture<Void> submitRelease(String requestId) {
        return facade.submitRelease(requestId);
    }

    public CompletableFuture<Void> submitReleaseRank(String requestId, int decodeRank) {
        return facade.submitReleaseRank(requestId, decodeRank);
    }

    public CompletableFuture<byte[]> submitReadKv(String requestId) {
        return facade.submitReadKv(requestId);
    }

    public CompletableFuture<PullStatus> submitStatus(String requestId) {
        return facade.submitStatus(requestId);
    }
}
