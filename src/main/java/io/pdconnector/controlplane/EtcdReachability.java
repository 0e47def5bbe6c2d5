package io.pdconnector.controlplane;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.jboss.logging.Logger;

/**
 * Whether etcd answers, as the store's worker last found it: the state, the retry backoff while it does
 * not answer, and the sentence health reports about it. Changed only on the store's worker thread; the
 * state and the sentence are read by health checks on any thread.
 */
final class EtcdReachability {

    /** Where the store stands with etcd; every transition is in {@link #answered} and {@link #failed}. */
    enum State {
        /** No call has been answered yet. */
        NOT_REACHED,
        /** The last call was answered. */
        ANSWERING,
        /** Answered before, not any more: retrying with a backoff, keeping the last view. */
        LOST
    }

    private static final Logger LOG = Logger.getLogger(EtcdReachability.class);
    static final Duration FIRST_BACKOFF = Duration.ofMillis(100);

    private final List<String> endpoints;
    private final Duration maxBackoff;
    private final AtomicLong reconnects;
    private volatile State state = State.NOT_REACHED;
    private volatile String problem = "not contacted yet";
    /** When the current spell without answers began; 0 while answering. */
    private volatile long lostAtMillis;
    private Duration backoff = FIRST_BACKOFF;

    EtcdReachability(List<String> endpoints, Duration maxBackoff, AtomicLong reconnects) {
        this.endpoints = List.copyOf(endpoints);
        this.maxBackoff = maxBackoff;
        this.reconnects = reconnects;
    }

    boolean answering() {
        return state == State.ANSWERING;
    }

    /** etcd answered a resync: a return after a loss is counted and logged, and the backoff starts over. */
    void answered(int records) {
        backoff = FIRST_BACKOFF;
        if (state == State.LOST) {
            reconnects.incrementAndGet();
            LOG.infof("etcd at %s answers again after %d ms; own record written, %d records read, watching",
                    endpoints, System.currentTimeMillis() - lostAtMillis, records);
        }
        state = State.ANSWERING;
        lostAtMillis = 0;
        problem = null;
    }

    /** A call went unanswered: the first of a spell is logged; an answering store is lost from now. */
    void failed(String why) {
        problem = why;
        if (lostAtMillis == 0) {
            lostAtMillis = System.currentTimeMillis();
            LOG.warnf("etcd at %s does not answer (%s); keeping the last view, retrying", endpoints, why);
        }
        if (state == State.ANSWERING) {
            state = State.LOST;
        }
    }

    /** How long to wait before the next try; each call doubles the next, up to {@code maxBackoff}. */
    Duration nextBackoff() {
        Duration now = backoff;
        Duration doubled = backoff.multipliedBy(2);
        backoff = doubled.compareTo(maxBackoff) > 0 ? maxBackoff : doubled;
        return now;
    }

    /** The health sentence about etcd, given what the store adds: the records it sees and its own record. */
    String describe(boolean reachable, int records, String prefix, String ownPart) {
        if (reachable) {
            return "etcd at " + endpoints + " answers; " + records + " records under " + prefix + "; " + ownPart;
        }
        String why = Optional.ofNullable(problem).orElse("its keep-alive got no answer for a TTL");
        long since = lostAtMillis;
        if (state == State.NOT_REACHED || since == 0) {
            return "etcd at " + endpoints + " not reached yet (" + why + "); " + ownPart;
        }
        return "etcd at " + endpoints + " unreachable for " + (System.currentTimeMillis() - since) / 1000 + " s ("
                + why + "); retrying every " + maxBackoff.toMillis() + " ms at most; keeping the last view of "
                + records + " records; " + ownPart;
    }
}
