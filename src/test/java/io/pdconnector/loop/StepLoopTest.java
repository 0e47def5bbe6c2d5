package io.pdconnector.loop;

import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.config.ProducerConfig;
import io.pdconnector.consumer.ConsumerFacade;
import io.pdconnector.consumer.PullOutcome;
import io.pdconnector.consumer.PullScheduler;
import io.pdconnector.consumer.PullState;
import io.pdconnector.testing.InProcessDirectory;
import io.pdconnector.error.UnavailableException;
import io.pdconnector.memory.SlotArray;
import io.pdconnector.producer.LeaseObserver;
import io.pdconnector.producer.LeaseScheduler;
import io.pdconnector.producer.ProducerFacade;
import io.pdconnector.producer.ProducerSnapshot;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import io.pdconnector.testing.ManualClock;
import io.pdconnector.testing.RecordingEngine;
import io.pdconnector.testing.ReferenceKv;
import java.nio.file.Path;
import java.time.Duration;
import java.time.InstantSource;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The loops on their own threads, as the service runs them: callers only submit and await with deadlines. */
class StepLoopTest {

    private static final Duration DEADLINE = Duration.ofSeconds(10);

    @TempDir
    Path dir;
    private final RecordingEngine engine = new RecordingEngine();
    private final InProcessDirectory registry = new InProcessDirectory();
    private final ManualClock clock = new ManualClock();

    private ProducerConfig.Builder producerConfig() {
        return ProducerConfig.builder("p", dir).geometry(Cluster.SMALL).blocks(16, 4, 0);
    }

    @Test
    void producerAndConsumerOnTheirOwnThreadsMoveKvAndReleaseEverything() throws Exception {
        LeaseScheduler p = new LeaseScheduler(producerConfig().build(), engine, registry, clock);
        ConsumerConfig dConfig = ConsumerConfig.builder("d").geometry(Cluster.SMALL).blocks(16).build();
        PullScheduler d = new PullScheduler(dConfig, engine, registry, clock);
        try (StepLoop pLoop = StepLoop.start(p, DEADLINE); StepLoop dLoop = StepLoop.start(d, DEADLINE)) {
            ProducerFacade producer = new ProducerFacade(p, DEADLINE);
            ConsumerFacade consumer = new ConsumerFacade(d, DEADLINE);
            for (int i = 0; i < 20; i++) {
                int[] tokens = prompt(i, 1 + i % 10);
                KvTransferParams params = producer.prefill("r" + i, tokens);
                PullOutcome o = consumer.pull("r" + i, tokens, params);
                assertEquals(PullState.RECEIVED, o.state());
                // what GET .../kv returns, compared here: the loop has no reference check of its own
                assertArrayEquals(ReferenceKv.of(dConfig.geometry(), tokens, dConfig.tpSize()),
                        consumer.readKv("r" + i));
                consumer.release("r" + i);
            }
            ProducerSnapshot s = awaitIdle(producer);
            assertTrue(s.idle(), "every lease was released by its reader: " + s);
            assertTrue(consumer.submitSnapshot().get(10, TimeUnit.SECONDS).idle());
        }
        assertEquals(java.util.List.of(), engine.unclosedAgents(), "each loop closed its agents on its own thread");
    }

    /** The last notifications may still be in P's inbox when D answers; P's loop drains them shortly. */
    private static ProducerSnapshot awaitIdle(ProducerFacade producer) throws Exception {
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        ProducerSnapshot s = producer.submitSnapshot().get(10, TimeUnit.SECONDS);
        while (!s.idle() && System.nanoTime() < deadline) {
            s = producer.submitSnapshot().get(10, TimeUnit.SECONDS);
        }
        return s;
    }

    @Test
    void aCommandWakesAProducerParkedForItsWholePause() throws Exception {
        // P parks its whole pause when idle; a command must not wait for the park's end: the 60 s park
        // outlasts the facade's 10 s deadline, so a command that only the park's end picked up would fail
        LeaseScheduler p = new LeaseScheduler(producerConfig().build(), engine, registry, clock);
        try (StepLoop pLoop = StepLoop.start(p, DEADLINE, Duration.ofSeconds(60))) {
            ProducerFacade producer = new ProducerFacade(p, DEADLINE);
            Thread.sleep(50); // the loop's first steps are done and it is parked
            for (int i = 0; i < 3; i++) {
                KvTransferParams params = producer.prefill("w" + i, prompt(i, 4));
                assertEquals("w" + i, params.remoteRequestId());
            }
        }
    }

    @Test
    void aLeaseNobodyReadsIsTakenBackAtItsExpiryByAProducerParkedForItsWholePause() throws Exception {
        // no command wakes P at an expiry: parked its whole 60 s pause, P left an expired lease's nonce in
        // its slot (and its blocks held) until something else woke it, and a reader's slot READ in that
        // window still found the nonce; P parks no longer than its reaper's next deadline
        CompletableFuture<Long> released = new CompletableFuture<>();
        LeaseObserver observer = new LeaseObserver() {
            @Override
            public void leaseReleased(long heldMillis) {
                released.complete(heldMillis);
            }
        };
        LeaseScheduler p = new LeaseScheduler(producerConfig().leaseDuration(Duration.ofMillis(200)).build(),
                engine, registry, InstantSource.system(), observer);
        try (StepLoop pLoop = StepLoop.start(p, DEADLINE, Duration.ofSeconds(60))) {
            ProducerFacade producer = new ProducerFacade(p, DEADLINE);
            producer.prefill("unread", prompt(1, 4));

            long heldMillis = released.get(DEADLINE.toMillis(), TimeUnit.MILLISECONDS);

            assertTrue(heldMillis >= 200, "taken back at its expiry, not before (L8): held " + heldMillis + " ms");
            ProducerSnapshot s = producer.submitSnapshot().get(10, TimeUnit.SECONDS);
            assertTrue(s.idle(), "its slot and blocks are back: " + s);
        }
    }

    @Test
    void aFullCommandQueueRejectsAtOnce() {
        LeaseScheduler p = new LeaseScheduler(producerConfig().commandQueueCapacity(2).build(), engine, registry, clock);
        ProducerFacade producer = new ProducerFacade(p, DEADLINE);
        producer.submitPrefill("a", prompt(1, 4));
        producer.submitPrefill("b", prompt(2, 4));

        UnavailableException e = assertThrows(UnavailableException.class,
                () -> producer.submitPrefill("c", prompt(3, 4)));

        assertTrue(e.getMessage().contains("busy"), e.getMessage());
    }

    @Test
    void aLoopThatCannotOpenFailsToStartWithItsReason() {
        engine.refuseRegionLabel = SlotArray.LABEL;
        LeaseScheduler p = new LeaseScheduler(producerConfig().build(), engine, registry, clock);

        IllegalStateException e = assertThrows(IllegalStateException.class, () -> StepLoop.start(p, DEADLINE));

        assertTrue(e.getMessage().contains("kv_lease_verification"), e.getMessage());
        assertEquals(java.util.List.of(), engine.unclosedAgents());
    }

    @Test
    void closingFailsCommandsThatWereNeverAnswered() throws Exception {
        LeaseScheduler p = new LeaseScheduler(producerConfig().build(), engine, registry, clock);
        p.open();
        CompletableFuture<KvTransferParams> pending = new ProducerFacade(p, DEADLINE).submitPrefill("a", prompt(1, 4));

        p.close();

        assertTrue(pending.isCompletedExceptionally());
        assertEquals(java.util.List.of(), engine.unclosedAgents());
    }
}
