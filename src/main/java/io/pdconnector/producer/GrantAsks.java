package io.pdconnector.producer;

import io.pdconnector.error.InvalidInputException;
import io.pdconnector.error.StateConflictException;
import io.pdconnector.error.UnavailableException;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The engine's names for its new-grant asks, so that it can take back a grant whose answer never reached
 * it (its batch timed out while P's loop, or P's whole JVM, was held up, and P granted afterwards). Without
 * them such a grant would hold its blocks, unseen by anyone, until its expiry. Owned by the step loop.
 *
 * <p>The grant an ask made carries its ask id ({@link Credit#askId}) while it is in {@link Credits}. A
 * withdrawal of an ask P has not seen (it is still on its way, or it never comes) leaves a tombstone, and an ask that arrives
 * while its tombstone stands is refused. A tombstone stands for the reservation timeout: an ask later than
 * that would make a grant no longer-lived than the tombstone was, the same bound as without withdrawals.
 */
public final class GrantAsks {

    /** An ask id: the engine's own, 1-64 characters that need no escaping anywhere. */
    public static final String ASK_ID_PATTERN = "[A-Za-z0-9._-]{1,64}";
    /** {@link #ASK_ID_PATTERN} in JSON Schema's dialect, anchored. */
    public static final String ASK_ID_SCHEMA_PATTERN = "^" + ASK_ID_PATTERN + "$";
    /** The reason of a new grant's refusal when its ask id already made a grant P holds. */
    public static final String ASK_ID_USED = "ask-id-used";
    /** Withdrawals of unseen asks P keeps at once: far more than an engine's failed batches in a timeout. */
    static final int MAX_TOMBSTONES = 4096;

    private static final Pattern VALID = Pattern.compile(ASK_ID_PATTERN);

    private final Map<String, Long> tombstoneUntil = new LinkedHashMap<>();

    static String require(String askId) {
        if (askId != null && !VALID.matcher(askId).matches()) {
            throw InvalidInputException.of("an ask id is 1-64 letters, digits, '.', '_' or '-', got '" + askId + "'");
        }
        return askId;
    }

    /**
     * Why a new grant for {@code askId} may not be made, or null (no ask id, or one neither used nor withdrawn);
     * {@code madeBy} is the grant P holds that this ask id made, or null.
     */
    StateConflictException refusal(String askId, Credit madeBy) {
        if (askId == null) {
            return null;
        }
        if (tombstoneUntil.containsKey(askId)) {
            return new StateConflictException(null, "ask " + askId + " was withdrawn before it reached P: no grant"
                    + " is made for it");
        }
        return madeBy == null ? null : new StateConflictException(ASK_ID_USED, null, "ask " + askId + " already"
                + " made grant " + madeBy.id() + ": an ask id names one ask; withdraw it to give that grant back");
    }

    /** The withdrawal of an ask P has not seen (yet): refused when {@link #MAX_TOMBSTONES} are kept. */
    void keepWithdrawal(String askId, long untilMillis) {
        if (!tombstoneUntil.containsKey(askId) && tombstoneUntil.size() >= MAX_TOMBSTONES) {
            throw new UnavailableException("too-many-withdrawals", "P keeps " + MAX_TOMBSTONES + " withdrawals of"
                    + " asks it has not seen; each goes at the reservation timeout; withdraw " + askId + " later");
        }
        tombstoneUntil.remove(askId); // a renewed one moves to the end: the map stays in order of time
        tombstoneUntil.put(askId, untilMillis);
    }

    /**
     * Drops every tombstone whose time is up. Runs every step: each lasts the same timeout from when it was
     * kept, so the map is in order of time and only the ones due are looked at.
     */
    void prune(long now) {
        Iterator<Long> until = tombstoneUntil.values().iterator();
        while (until.hasNext() && now >= until.next()) {
            until.remove();
        }
    }

    int tombstones() {
        return tombstoneUntil.size();
    }
}
