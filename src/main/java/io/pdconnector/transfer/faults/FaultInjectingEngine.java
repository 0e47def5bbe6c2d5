package io.pdconnector.transfer.faults;

import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferEngine;
import java.util.Optional;

/**
 * A transfer engine that strikes some READs of the one it wraps as a {@link FaultPlan} says (they fail,
 * are delayed, or hold their caller), and some notifications its agents send as a
 * {@link NotificationFaultPlan} says (duplicated, late, replayed). Everything else passes through. It is
 * for fault tests of the packaged service ({@code pd.faults.enabled}); nothing creates one unless configured.
 */
public final class FaultInjectingEngine implements TransferEngine {

    private final TransferEngine inner;
    private final Optional<FaultPlan> reads;
    private final Optional<NotificationFaultPlan> notifications;
    private final Strikes readStrikes;
    private final Strikes notificationStrikes;

    public FaultInjectingEngine(TransferEngine inner, FaultPlan plan) {
        this(inner, Optional.of(plan), Optional.empty(), plan.seed());
    }

    /** At least one plan; {@code seed} seeds both plans' random choices. */
    public FaultInjectingEngine(TransferEngine inner, Optional<FaultPlan> reads,
            Optional<NotificationFaultPlan> notifications, long seed) {
        if (reads.isEmpty() && notifications.isEmpty()) {
            throw new IllegalArgumentException("pd.faults.enabled with nothing to strike: set pd.faults.read-kind "
                    + "or pd.faults.notifications.kind");
        }
        this.inner = inner;
        this.reads = reads;
        this.notifications = notifications;
        this.readStrikes = reads.map(p -> new Strikes(p.probability(), p.everyNth(), seed)).orElse(null);
        this.notificationStrikes = notifications.map(p -> new Strikes(p.probability(), p.everyNth(), seed + 1))
                .orElse(null);
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

    /** The READ plan; empty when only notifications are struck. */
    public Optional<FaultPlan> readPlan() {
        return reads;
    }

    public Optional<NotificationFaultPlan> notificationPlan() {
        return notifications;
    }

    /** READs struck so far. */
    public long struck() {
        return readStrikes == null ? 0 : readStrikes.struck();
    }

    /** Notifications struck so far. */
    public long notificationsStruck() {
        return notificationStrikes == null ? 0 : notificationStrikes.struck();
    }

    /** Whether a READ of this kind from this source rank is struck; counts it if so. */
    boolean strikes(boolean slotRead, int sourceRank) {
        if (reads.isEmpty()) {
            return false;
        }
        FaultPlan plan = reads.get();
        if (!plan.kind().covers(slotRead)
                || plan.sourceRank().isPresent() && plan.sourceRank().getAsInt() != sourceRank) {
            return false;
        }
        return readStrikes.next() >= 0;
    }

    /** What to do with a notification of this kind, or empty to send it as it is; counts a strike. */
    Optional<NotificationFaultPlan.Action> strikeNotification(boolean heartbeat) {
        if (notifications.isEmpty() || !notifications.get().kind().covers(heartbeat)) {
            return Optional.empty();
        }
        long strike = notificationStrikes.next();
        if (strike < 0) {
            return Optional.empty();
        }
        var actions = notifications.get().actions();
        return Optional.of(actions.get((int) (strike % actions.size())));
    }
}
