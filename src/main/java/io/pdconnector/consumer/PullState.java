package io.pdconnector.consumer;

/** Where a pull is; {@link Pull#moveTo} is the only place that changes it. */
public enum PullState {
    /** Arrived, heartbeating, waiting for local blocks. */
    QUEUED,
    /** Block READs posted on every source rank, without notification. */
    READING,
    /** Every block READ completed; waiting for the lease slot READs (L5). */
    CHECKING_SLOTS,
    RECEIVED,
    DECLINED,
    RECOMPUTED;

    public boolean decided() {
        return this == RECEIVED || this == DECLINED || this == RECOMPUTED;
    }

    boolean canMoveTo(PullState next) {
        return switch (this) {
            case QUEUED -> next == READING || next == DECLINED || next == RECOMPUTED;
            case READING -> next == CHECKING_SLOTS || next == RECEIVED || next == DECLINED || next == RECOMPUTED;
            case CHECKING_SLOTS -> next == RECEIVED || next == DECLINED || next == RECOMPUTED;
            case RECEIVED, DECLINED, RECOMPUTED -> false;
        };
    }
}
