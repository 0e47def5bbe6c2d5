package io.pdconnector.consumer;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * When a pull entered each of its phases on D's loop, in {@link System#nanoTime} (0 for a phase it
 * skipped): arrived (the command drained), local blocks assigned (its READs are posted next), READs
 * posted, READs terminal, decided.
 * What an operator reads to see where a slow pull's time went; a phase runs from its stamp to the
 * next stamp that is set, so a pull declined before reading has no {@code post}, and one decided
 * without a slot check (verification off, a failed READ) has its {@code read} run up to the decision.
 */
public record PullTimeline(long arrived, long postStarted, long readsPosted, long readsDone, long decided) {

    /**
     * Milliseconds of each phase, under the names of the pull reply's {@code timings}: {@code
     * to_loop_ms} from {@code enteredAt} (when the caller's HTTP request reached the resource) to
     * arrival, then {@code queued_ms}, {@code post_ms}, {@code read_ms}, {@code slot_check_ms}, and
     * {@code to_reply_ms} from the decision to {@code replyAt}. Empty for a pull never decided.
     */
    public Map<String, Double> phasesMillis(long enteredAt, long replyAt) {
        Map<String, Double> out = new LinkedHashMap<>();
        if (decided == 0) {
            return out;
        }
        long[] stamps = {enteredAt, arrived, postStarted, readsPosted, readsDone, decided, replyAt};
        String[] names = {"to_loop_ms", "queued_ms", "post_ms", "read_ms", "slot_check_ms", "to_reply_ms"};
        for (int i = 0; i < names.length; i++) {
            if (stamps[i] == 0) {
                continue;
            }
            int next = i + 1;
            while (stamps[next] == 0) {
                next++;
            }
            out.put(names[i], (stamps[next] - stamps[i]) / 1e6);
        }
        return out;
    }

    /**
     * The pull as a caller that reached the loop at {@code joined} (a decode rank joining a pull another
     * rank started) saw it: every phase that had begun before is moved to {@code joined}, so the caller's
     * {@code to_loop_ms} ends there and its phases still add up to its own {@code pull_ms}.
     */
    PullTimeline seenFrom(long joined) {
        return new PullTimeline(Math.max(arrived, joined), later(postStarted, joined), later(readsPosted, joined),
                later(readsDone, joined), later(decided, joined));
    }

    /** A phase the pull skipped (0) stays skipped. */
    private static long later(long stamp, long joined) {
        return stamp == 0 ? 0 : Math.max(stamp, joined);
    }
}
