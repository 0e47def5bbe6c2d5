package io.pdconnector.transfer.faults;

import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferEngine;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A transfer engine that strikes some READs of the one it wraps as {@link FaultPlan} says: they fail,
 * are delayed, or hold their caller. Everything else passes through. It is for fault tests of the
 * packaged service ({@code pd.faults.enabled}); nothing creates one unless configured.
 */
public final class FaultInjectingEngine implements TransferEngine {

    private final TransferEngine inner;
    private final FaultPlan plan;
    private final AtomicLong candidates = new AtomicLong();
    private final AtomicLong struck = new AtomicLong();
    private final SplittableRandom random;

    public FaultInjectingEngine(TransferEngine inner, FaultPlan plan) {
        this.inner = inner;
        this.plan = plan;
        this.random = new SplittableRandom(plan.seed());
    }

    @Override
    public String kind() {
        return inner.kind();
    }

    @Override
    public TransferAgent createAgent(String name) {
        return new FaultInjectingAgent(inner.createAgent(name), this);
    }

    @Override
    public void close() {
        inner.close();
    }

    public FaultPlan plan() {
        return plan;
    }

    /** READs struck so far. */
    public long struck() {
        return struck.get();
    }

    /** Whether a READ of this kind from this source rank is struck; counts it if so. */
    boolean strikes(boolean slotRead, int sourceRank) {
        if (!plan.kind().covers(slotRead)
                || plan.sourceRank().isPresent() && plan.sourceRank().getAsInt() != sourceRank) {
            return false;
        }
        long n = candidates.incrementAndGet();
        boolean hit = plan.everyNth() > 0 ? n % plan.everyNth() == 0 : draw() < plan.probability();
        if (hit) {
            struck.incrementAndGet();
        }
        return hit;
    }

    private double draw() {
        synchronized (random) { // P's and D's loops share the engine
            return random.nextDouble();
        }
    }
}
