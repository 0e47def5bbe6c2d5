package io.pdconnector.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.config.LoadFailurePolicy;
import io.pdconnector.config.ProducerConfig;
import io.pdconnector.consumer.ConsumerFixture;
import io.pdconnector.consumer.ConsumerSnapshot;
import io.pdconnector.consumer.PullOutcome;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.producer.ProducerSnapshot;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.transfer.TransferEngine;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Producers and consumers on one loopback engine and a manual clock, stepped by the test thread
 * (which is therefore the step-loop thread that owns every agent).
 */
public final class Cluster implements AutoCloseable {

    /** Small enough that thousands of pulls take seconds: 512-byte blocks at TP1. */
    public static final ModelGeometry SMALL = new ModelGeometry(2, 2, 8, 4, 2);
    public static final Duration LEASE = Duration.ofSeconds(30);
    private static final int MAX_STEPS = 1_000;

    public final ManualClock clock = new ManualClock();
    public final RecordingEngine engine;
    public final InProcessDirectory registry = new InProcessDirectory();
    private final Path stateDir;
    private final List<ProducerFixture> producers = new ArrayList<>();
    private final List<ConsumerFixture> consumers = new ArrayList<>();
    private final List<RawPeer> rawPeers = new ArrayList<>();

    /** On the loopback engine. */
    public Cluster() {
        this(new RecordingEngine());
    }

    /**
     * On {@code transfers}, e.g. real NIXL: then READs and notifications complete in real time, and
     * the thread that creates the loops must be the one that steps them.
     */
    public Cluster(TransferEngine transfers) {
        this(new RecordingEngine(transfers));
    }

    private Cluster(RecordingEngine engine) {
        this.engine = engine;
        try {
            stateDir = Files.createTempDirectory("pd-state");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public Path stateDir() {
        return stateDir;
    }

    /** A builder of this cluster's P settings: its own state directory, {@link #SMALL}, 16 blocks. */
    public ProducerConfig.Builder producerConfig(String engineId) {
        return ProducerConfig.builder(engineId, stateDir.resolve(engineId)).geometry(SMALL).blocks(16, 4, 0);
    }

    /** A builder of this cluster's D settings: {@link #SMALL}, 16 blocks. */
    public ConsumerConfig.Builder consumerConfig(String engineId) {
        return ConsumerConfig.builder(engineId).geometry(SMALL).blocks(16);
    }

    public ConsumerConfig.Builder consumerConfig(String engineId, boolean verify, LoadFailurePolicy policy) {
        return consumerConfig(engineId).verification(verify).failurePolicy(policy);
    }

    public ProducerFixture producer(ProducerConfig.Builder config) {
        return producer(config.build());
    }

    public ConsumerFixture consumer(ConsumerConfig.Builder config) {
        return consumer(config.build());
    }

    public ProducerFixture producer(ProducerConfig config) {
        ProducerFixture p = new ProducerFixture(config, engine, registry, clock);
        p.open();
        producers.add(p);
        return p;
    }

    /** Shuts a producer down, as a crash-free restart would before the new process starts. */
    public void stop(ProducerFixture p) {
        producers.remove(p);
        p.close();
    }

    public ConsumerFixture consumer(ConsumerConfig config) {
        ConsumerFixture c = new ConsumerFixture(config, engine, registry, clock);
        c.open();
        consumers.add(c);
        return c;
    }

    /** One step of every producer, then of every consumer. */
    public void step() {
        producers.forEach(ProducerFixture::doWork);
        consumers.forEach(ConsumerFixture::doWork);
    }

    public void stepProducers() {
        producers.forEach(ProducerFixture::doWork);
    }

    public void stepConsumers() {
        consumers.forEach(ConsumerFixture::doWork);
    }

    public void steps(int n) {
        for (int i = 0; i < n; i++) {
            step();
        }
    }

    /** Steps until the future is done (bounded), then returns its value or rethrows its failure. */
    public <T> T await(CompletableFuture<T> future) {
        for (int i = 0; i < MAX_STEPS && !future.isDone(); i++) {
            step();
        }
        assertTrue(future.isDone(), "no answer within " + MAX_STEPS + " steps");
        try {
            return future.join();
        } catch (CompletionException e) {
            throw (RuntimeException) e.getCause();
        }
    }

    public KvTransferParams prefill(ProducerFixture p, String id, int[] tokens) {
        return await(p.facade().submitPrefill(id, tokens));
    }

    public PullOutcome pull(ConsumerFixture c, String id, int[] tokens, KvTransferParams params) {
        return await(c.submitPull(id, tokens, params));
    }

    /**
     * Whether D's KV of pull {@code id}, read as {@code GET .../kv} reads it, is exactly the reference
     * engine's KV of the prompt the pull was sent with. Compared here, on the test's side, as a user
     * would: D's loop never recomputes reference KV (issue 13). A pull with no KV to read fails.
     */
    public boolean matches(ConsumerFixture c, String id) {
        byte[] held = await(c.submitReadKv(id));
        return Arrays.equals(held, ReferenceKv.of(c.config().geometry(), c.prompt(id), c.config().tpSize()));
    }

    /** D's decode is done with the pulled KV. */
    public void release(ConsumerFixture c, String id) {
        await(c.submitRelease(id));
    }

    /** Lets every lease lapse and be reaped. */
    public void lapseAll() {
        clock.advance(LEASE.plusSeconds(1));
        steps(3);
    }

    /**
     * Nothing held: every P block free, no lease, every slot zero on every rank, no READ in flight,
     * every D block free. (Agents' handles are checked by {@link #close}: an agent refuses to close
     * while it holds one.)
     */
    public void assertNoLeak() {
        steps(2);
        for (ProducerFixture p : producers) {
            ProducerSnapshot s = p.snapshot();
            assertTrue(s.idle(), p.name() + " still holds something: " + s);
        }
        for (ConsumerFixture c : consumers) {
            ConsumerSnapshot s = c.snapshot();
            assertTrue(s.idle(), c.name() + " still holds something: " + s);
        }
    }

    /** An agent outside any loop that has loaded {@code engineId}'s metadata: a late or rogue reader. */
    public RawPeer rawPeer(String name, String engineId) {
        RawPeer peer = new RawPeer(engine.createAgent(name), registry.lookup(engineId).orElseThrow().ranks());
        rawPeers.add(peer);
        return peer;
    }

    /** Closes every loop; fails if any agent still held a handle after its owner released its own. */
    @Override
    public void close() {
        RuntimeException first = null;
        for (RawPeer r : rawPeers) {
            first = closeQuietly(r::close, first);
        }
        for (ConsumerFixture c : consumers) {
            first = closeQuietly(c::close, first);
        }
        for (ProducerFixture p : producers) {
            first = closeQuietly(p::close, first);
        }
        if (first == null && !engine.unclosedAgents().isEmpty()) {
            first = new IllegalStateException("agents not closed, so still holding handles: "
                    + engine.unclosedAgents());
        }
        engine.close();
        if (first != null) {
            throw first;
        }
    }

    private static RuntimeException closeQuietly(Runnable close, RuntimeException first) {
        try {
            close.run();
            return first;
        } catch (RuntimeException e) {
            return first == null ? e : first;
        }
    }

    public static int[] prompt(int seed, int length) {
        int[] t = new int[length];
        for (int i = 0; i < length; i++) {
            t[i] = Math.floorMod(seed * 7919 + i * 104729, 50_000);
        }
        return t;
    }

    public TransferEngine transferEngine() {
        return engine;
    }

    public static void assertDeclined(PullOutcome o, String reason) {
        assertEquals(io.pdconnector.consumer.PullState.DECLINED, o.state(), "outcome " + o);
        assertEquals(reason, o.reason().wire());
    }
}
