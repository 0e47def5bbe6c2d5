package io.pdconnector.testing;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Lets a test decide when things happen on the loopback engine, as a model-checker trail does:
 * while closed, a READ stays in flight (loopback copies only when it is polled through) until the
 * test grants a permit for its kind and remote agent, and notifications sent by agents whose name
 * starts with a held prefix wait until the test delivers them. Used from the test thread only.
 */
public final class Gates {

    /** A notification that was sent but has not reached its receiver yet. */
    public record Held(String from, String to, String text, Runnable send) {
    }

    private boolean closed;
    private String heldPrefix;
    private final Map<String, Integer> permits = new HashMap<>();
    private final Set<String> failures = new HashSet<>();
    private final List<Held> held = new ArrayList<>();
    private final Map<String, RuntimeException> crashes = new HashMap<>();
    private final Set<String> cancelRefusals = new HashSet<>();
    private final Map<String, Runnable> hangs = new HashMap<>();
    private boolean cancelsLeak;

    /** Where an injected crash strikes a READ: in the post call or in a status poll. */
    public enum At { POST, POLL }

    /**
     * The next post (or poll) of a READ of {@code kind} from {@code remoteAgent} throws {@code thrown}: not a
     * transfer error but a bug's exception, as a step phase's own code might throw.
     */
    public void crashNext(At at, ReadKind kind, String remoteAgent, Throwable thrown) {
        crashes.put(at + " " + key(kind, remoteAgent), new Crash(thrown));
    }

    /** Throws the crash due at {@code at} for this READ, if any. */
    void crashIfDue(At at, ReadKind kind, String remoteAgent) {
        RuntimeException crash = crashes.remove(at + " " + key(kind, remoteAgent));
        if (crash == null) {
            return;
        }
        if (crash.getCause() instanceof Error e) {
            throw e;
        }
        throw (RuntimeException) crash.getCause();
    }

    /** Carries a crash (an Error too) until it is thrown. */
    private static final class Crash extends RuntimeException {
        Crash(Throwable thrown) {
            super(thrown);
        }
    }

    /**
     * From now on a READ released while still in flight is cancelled in name only, as UCX may do:
     * the release succeeds, but its bytes still land, when the test calls
     * {@link RecordingEngine#landCancelledReads}.
     */
    public void leakCancels() {
        cancelsLeak = true;
    }

    boolean cancelsLeak() {
        return cancelsLeak;
    }

    /**
     * From now on releasing a READ of {@code kind} from {@code remoteAgent} that is still in flight
     * fails as NIXL's does when its backend cannot cancel it (REPOST_ACTIVE): the READ stays held.
     */
    public void refuseCancel(ReadKind kind, String remoteAgent) {
        cancelRefusals.add(key(kind, remoteAgent));
    }

    boolean refusesCancel(ReadKind kind, String remoteAgent) {
        return cancelRefusals.contains(key(kind, remoteAgent));
    }

    /**
     * The next post of a READ of {@code kind} from {@code remoteAgent} hangs, as a stuck call would:
     * {@code whileHung} runs inside the post call (a test advances its clock there), then the READ is posted.
     */
    public void hangNextPost(ReadKind kind, String remoteAgent, Runnable whileHung) {
        hangs.put(key(kind, remoteAgent), whileHung);
    }

    void hangIfDue(ReadKind kind, String remoteAgent) {
        Runnable whileHung = hangs.remove(key(kind, remoteAgent));
        if (whileHung != null) {
            whileHung.run();
        }
    }

    /** From now on READs wait for permits; notifications pass. */
    public void close() {
        close(null);
    }

    /** From now on READs wait for permits, and notifications from agents named {@code prefix}* wait. */
    public void close(String prefix) {
        closed = true;
        heldPrefix = prefix;
    }

    /** Everything passes again; what is held stays held until delivered or discarded. */
    public void open() {
        closed = false;
        heldPrefix = null;
    }

    /** One READ of {@code kind} from {@code remoteAgent} may land at its next poll. */
    public void permit(ReadKind kind, String remoteAgent) {
        permits.merge(key(kind, remoteAgent), 1, Integer::sum);
    }

    /** The next READ of {@code kind} from {@code remoteAgent} that is let through fails instead. */
    public void failNext(ReadKind kind, String remoteAgent) {
        failures.add(key(kind, remoteAgent));
    }

    boolean letThrough(ReadKind kind, String remoteAgent) {
        if (!closed) {
            return true;
        }
        String k = key(kind, remoteAgent);
        int left = permits.getOrDefault(k, 0);
        if (left == 0) {
            return false;
        }
        permits.put(k, left - 1);
        return true;
    }

    boolean takeFailure(ReadKind kind, String remoteAgent) {
        return failures.remove(key(kind, remoteAgent));
    }

    boolean hold(String from, String to, String text, Runnable send) {
        if (heldPrefix == null || !from.startsWith(heldPrefix)) {
            return false;
        }
        held.add(new Held(from, to, text, send));
        return true;
    }

    /** Delivers, in the order sent, every held notification that {@code which} accepts; returns how many. */
    public int deliver(Predicate<Held> which) {
        List<Held> due = held.stream().filter(which).toList();
        held.removeAll(due);
        due.forEach(h -> h.send().run());
        return due.size();
    }

    /** Drops held notifications whose receiver is gone (a restarted process's inbox died with it). */
    public int discard(Predicate<Held> which) {
        List<Held> gone = held.stream().filter(which).toList();
        held.removeAll(gone);
        return gone.size();
    }

    public List<Held> held() {
        return List.copyOf(held);
    }

    private static String key(ReadKind kind, String remoteAgent) {
        return kind.word() + " " + remoteAgent;
    }
}
