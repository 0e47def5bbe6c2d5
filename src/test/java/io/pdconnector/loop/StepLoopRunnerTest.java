package io.pdconnector.loop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The runner alone, with a scripted worker: open, steps and close on one thread; a failed step stops it. */
class StepLoopRunnerTest {

    private static final Duration DEADLINE = Duration.ofSeconds(10);

    /** Records which thread did what; fails its step number {@code failAt} (0: never) or its open. */
    private static final class ScriptedWorker implements StepWorker {
        final List<String> events = Collections.synchronizedList(new ArrayList<>());
        final List<Thread> threads = Collections.synchronizedList(new ArrayList<>());
        final RuntimeException failure = new IllegalStateException("step 3 broke");
        final int failAt;
        final boolean failOpen;
        volatile int steps;

        ScriptedWorker(int failAt, boolean failOpen) {
            this.failAt = failAt;
            this.failOpen = failOpen;
        }

        @Override
        public String name() {
            return "scripted";
        }

        @Override
        public void open() {
            threads.add(Thread.currentThread());
            events.add("open");
            if (failOpen) {
                throw new IllegalStateException("no slots registered");
            }
        }

        @Override
        public int doWork() {
            threads.add(Thread.currentThread());
            if (++steps == failAt) {
                throw failure;
            }
            return 1;
        }

        @Override
        public void close() {
            threads.add(Thread.currentThread());
            events.add("close");
        }
    }

    @Test
    void aLoopStepsOnOneThreadUntilStoppedThenClosesThere() throws Exception {
        ScriptedWorker worker = new ScriptedWorker(0, false);
        StepLoop loop = StepLoop.start(worker, DEADLINE);
        awaitSteps(worker, 10);
        assertTrue(loop.turning());

        loop.stop(DEADLINE);

        assertFalse(loop.turning());
        assertEquals(List.of("open", "close"), worker.events);
        assertEquals(1, worker.threads.stream().distinct().count(), "open, steps and close on the loop's thread");
        assertFalse(worker.threads.contains(Thread.currentThread()));
    }

    @Test
    void aFailedStepStopsTheLoopClosesTheWorkerAndStopRethrowsTheCause() throws Exception {
        ScriptedWorker worker = new ScriptedWorker(3, false);
        StepLoop loop = StepLoop.start(worker, DEADLINE);
        long until = System.nanoTime() + DEADLINE.toNanos();
        while (loop.turning() && System.nanoTime() < until) {
            Thread.sleep(1);
        }

        assertFalse(loop.turning(), "liveness sees a stopped loop");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> loop.stop(DEADLINE));
        assertSame(worker.failure, e.getCause());
        assertEquals(3, worker.steps, "no step after the failed one");
        assertEquals(List.of("open", "close"), worker.events);
    }

    @Test
    void aWorkerThatCannotOpenFailsStartWithItsReason() {
        ScriptedWorker worker = new ScriptedWorker(0, true);

        IllegalStateException e = assertThrows(IllegalStateException.class, () -> StepLoop.start(worker, DEADLINE));

        assertTrue(e.getMessage().contains("no slots registered"), e.getMessage());
        assertEquals(0, worker.steps);
    }

    /**
     * Does one unit of work in its first step, then none; says whether it spins when idle. Given a
     * deadline, sets it that long after its first idle step and does one unit of work in the first step at
     * or after it, as P's reaper does at an expiry.
     */
    private static final class OnceBusyWorker implements StepWorker {
        final boolean spins;
        final long deadlineNanos;
        volatile int steps;
        volatile long dueAtNanos = Long.MAX_VALUE;
        volatile long actedAtNanos;
        volatile int stepsWhenActed;

        OnceBusyWorker(boolean spins) {
            this(spins, 0);
        }

        OnceBusyWorker(boolean spins, Duration deadline) {
            this(spins, deadline.toNanos());
        }

        private OnceBusyWorker(boolean spins, long deadlineNanos) {
            this.spins = spins;
            this.deadlineNanos = deadlineNanos;
        }

        @Override
        public String name() {
            return spins ? "spinning" : "parking";
        }

        @Override
        public void open() {
        }

        @Override
        public int doWork() {
            long now = System.nanoTime();
            if (++steps == 2 && deadlineNanos > 0) {
                dueAtNanos = now + deadlineNanos;
            }
            if (now >= dueAtNanos) {
                dueAtNanos = Long.MAX_VALUE; // acted on: the next deadline is none
                stepsWhenActed = steps;
                actedAtNanos = now;
                return 1;
            }
            return steps == 1 ? 1 : 0;
        }

        @Override
        public boolean spinsWhenIdle() {
            return spins;
        }

        @Override
        public long nanosUntilDue() {
            long due = dueAtNanos;
            return due == Long.MAX_VALUE ? Long.MAX_VALUE : Math.max(0, due - System.nanoTime());
        }

        @Override
        public void close() {
        }
    }

    @Test
    void anIdleWorkerThatDoesNotSpinParksAtOnceAndOneThatSpinsStepsThroughItsSpinsAndYieldsFirst() throws Exception {
        // P's loop: every idle step of a spinning loop is a whole step (its sweeps, its NIXL drain) on a core
        // the engine needs; a long park makes the count independent of this machine's speed
        Duration longPark = Duration.ofSeconds(10);
        OnceBusyWorker parking = new OnceBusyWorker(false);
        OnceBusyWorker spinning = new OnceBusyWorker(true);
        try (StepLoop a = StepLoop.start(parking, DEADLINE, longPark);
                StepLoop b = StepLoop.start(spinning, DEADLINE, longPark)) {
            // the spinning loop's 100 spins and 100 yields are steps whatever they cost: a yield on a busy
            // host may take a whole time slice, so wait for the count, not for a time
            long until = System.nanoTime() + DEADLINE.toNanos();
            while (spinning.steps <= 200 && System.nanoTime() < until) {
                Thread.sleep(1);
            }
            assertTrue(spinning.steps > 200, "the spinning loop stepped " + spinning.steps + " times");
            // the parking loop parks 10 s at once after its busy step: it stepped twice
            assertTrue(parking.steps < 100, "the parking loop stepped " + parking.steps + " times");
        }
    }

    @Test
    void anIdleWorkerThatDoesNotSpinParksItsWholeParkFromTheFirstIdleStep_notThroughADoublingRamp() throws Exception {
        // P's loop: its work comes as commands, which wake it, so short parks after a command only cost
        // wake-ups (each a whole step) on a core the engine needs; the measured plugin P woke about 60 times
        // a request with parks doubling from 1 us
        OnceBusyWorker parking = new OnceBusyWorker(false);
        try (StepLoop loop = StepLoop.start(parking, DEADLINE, Duration.ofSeconds(10))) {
            long until = System.nanoTime() + DEADLINE.toNanos();
            while (parking.steps < 2 && System.nanoTime() < until) {
                Thread.sleep(1);
            }
            Thread.sleep(300); // a doubling ramp would step about 18 times in this while
            assertTrue(parking.steps <= 3, "the busy step, then one idle step and its 10 s park (a third if the"
                    + " park woke spuriously), not " + parking.steps);
            // the stop wakes it: the 9.7 s left of its park would outlast this deadline
            loop.stop(Duration.ofSeconds(5));
        }
    }

    @Test
    void anIdleWorkerThatDoesNotSpinParksOnlyUntilItsNextDeadline() throws Exception {
        // P's reaper: no command wakes the loop at an expiry, so a loop parked its whole pause zeroed an
        // expired lease's slot up to a park late (a reader's slot READ then still found the nonce); the 60 s
        // park outlasts the wait below, so only a park that ends at the deadline passes
        Duration deadline = Duration.ofMillis(50);
        OnceBusyWorker parking = new OnceBusyWorker(false, deadline);
        try (StepLoop loop = StepLoop.start(parking, DEADLINE, Duration.ofSeconds(60))) {
            long until = System.nanoTime() + DEADLINE.toNanos();
            while (parking.actedAtNanos == 0 && System.nanoTime() < until) {
                Thread.sleep(1);
            }
            assertTrue(parking.actedAtNanos != 0, "the deadline was not acted on within " + DEADLINE
                    + " of a 60 s park; steps: " + parking.steps);
            // it parked until the deadline rather than stepping towards it: the busy step, the idle step that
            // set it, the step at it (one more if a park woke spuriously)
            assertTrue(parking.stepsWhenActed <= 4, "acted at step " + parking.stepsWhenActed);
            Thread.sleep(100);
            // and once acted on, it parks its whole pause again instead of spinning on a deadline now past
            assertTrue(parking.steps <= parking.stepsWhenActed + 2, "stepped " + parking.steps
                    + " times, acted at step " + parking.stepsWhenActed);
            loop.stop(Duration.ofSeconds(5));
        }
    }

    private static void awaitSteps(ScriptedWorker worker, int n) throws InterruptedException {
        long until = System.nanoTime() + DEADLINE.toNanos();
        while (worker.steps < n && System.nanoTime() < until) {
            Thread.sleep(1);
        }
        assertTrue(worker.steps >= n, "the loop stepped " + worker.steps + " times");
    }
}
