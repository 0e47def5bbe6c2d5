package io.pdconnector.transfer.faults;

import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;

/** Chooses which candidates a plan strikes: every n-th, or each with a seeded probability. */
final class Strikes {

    private final double probability;
    private final int everyNth;
    private final AtomicLong candidates = new AtomicLong();
    private final AtomicLong struck = new AtomicLong();
    private final SplittableRandom random;

    Strikes(double probability, int everyNth, long seed) {
        this.probability = probability;
        this.everyNth = everyNth;
        this.random = new SplittableRandom(seed);
    }

    /** Refuses a choice that is not exactly one of a probability in (0, 1] and an every-nth above 0. */
    static void validate(String keyPrefix, double probability, int everyNth) {
        if (!(probability >= 0 && probability <= 1)) {
            throw new IllegalArgumentException(keyPrefix + "probability must be in [0, 1], got " + probability);
        }
        if (everyNth < 0) {
            throw new IllegalArgumentException(keyPrefix + "every-nth must not be negative, got " + everyNth);
        }
        if ((probability > 0) == (everyNth > 0)) {
            throw new IllegalArgumentException("fault injection needs exactly one of " + keyPrefix
                    + "probability (> 0) and " + keyPrefix + "every-nth (> 0); got " + probability + " and "
                    + everyNth);
        }
    }

    /** Whether the next candidate is struck; counts it if so. Returns the strike's 0-based number, or -1. */
    long next() {
        long n = candidates.incrementAndGet();
        boolean hit = everyNth > 0 ? n % everyNth == 0 : draw() < probability;
        return hit ? struck.getAndIncrement() : -1;
    }

    long struck() {
        return struck.get();
    }

    private double draw() {
        synchronized (random) { // P's and D's loops may share the engine
            return random.nextDouble();
        }
    }
}
