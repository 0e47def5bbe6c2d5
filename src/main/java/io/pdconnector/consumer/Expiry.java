package io.pdconnector.consumer;

import java.util.ArrayList;
import java.util.List;
import org.jboss.logging.Logger;

/**
 * Declines, as timeout, every undecided pull past its deadline, whatever phase it waits in; and
 * releases every decided pull still held past its retention ({@code pd.consumer.retention}): decode
 * neither read nor released its KV, so its caller is gone and its blocks and request id are freed
 * (one D's ranks share, whichever ranks did not release it). An undecided pull whose caller cancelled
 * its future (the HTTP client went away) is aborted at once; only the caller that started it counts,
 * as a rank that joined it and went away just stops waiting.
 */
final class Expiry {

    private static final Logger LOG = Logger.getLogger(Expiry.class);

    private final ConsumerState state;
    private final Decider decider;
    /** The pulls due this step, gathered before any is acted on (acting changes the map); reused, so an idle step allocates nothing. */
    private final List<Pull> due = new ArrayList<>();

    Expiry(ConsumerState state, Decider decider) {
        this.state = state;
        this.decider = decider;
    }

    int expire(long now) {
        for (Pull pull : state.pulls.values()) {
            if (pull.state().decided() ? now >= pull.retainedUntilMillis()
                    : pull.reply().isCancelled() || now >= pull.deadlineMillis()) {
                due.add(pull);
            }
        }
        if (due.isEmpty()) {
            return 0;
        }
        try {
            return act(now);
        } finally {
            due.clear();
        }
    }

    private int act(long now) {
        int n = 0;
        for (Pull pull : due) {
            if (pull.state().decided()) {
                if (now >= pull.retainedUntilMillis()) {
                    state.forget(pull);
                    // a declined pull D's ranks share is kept only for ranks yet to ask: it held no KV to read
                    if (pull.state() != PullState.DECLINED) {
                        state.counters.expiredUnread.incrementAndGet();
                    }
                    n++;
                }
            } else if (pull.reply().isCancelled() || now >= pull.deadlineMillis()) {
                boolean callerGone = pull.reply().isCancelled();
                DeclineReason why = callerGone ? DeclineReason.ABORTED : DeclineReason.TIMEOUT;
                if (callerGone) {
                    state.counters.callerGone.incrementAndGet();
                    LOG.debugf("pull %s aborted in %s: its caller went away before the answer", pull.requestId(),
                            pull.state());
                }
                n += decider.guard(pull, () -> {
                    decider.decide(pull, why);
                    return 1;
                });
            }
        }
        return n;
    }
}
