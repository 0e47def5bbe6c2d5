package io.pdconnector.producer;

/** One prefill rank's hold on a lease's blocks. */
public enum RankHold {
    HELD,
    /** The rank's slot clear is queued; it reports finished-sending once the clear is applied. */
    CLEARING,
    FINISHED
}
