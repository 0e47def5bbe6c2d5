package io.pdconnector.router;

import java.util.Optional;
import java.util.Set;

/**
 * What a failed attempt leads to. A pull D declined because of P (its lease lapsed, its slot could
 * not be read, it restarted or left, D does not know it) is worth a new prefill, preferably on
 * another P; so is a leg that got no answer or a server error, or an instance that does not serve
 * the leg. Anything else (the client's bad input, a conflict on the request id) would fail again and
 * is answered as it is. Every failure after P's leg was sent aborts P's lease: it may hold one.
 */
public final class RetryPolicy {

    /** D's decline reasons that a new prefill can cure. */
    public static final Set<String> RETRIED_DECLINES = Set.of("lease_mismatch", "slot_read_failed", "no_lease",
            "transfer_failed", "peer_restarted", "peer_gone", "unknown_peer");
    /**
     * D refuses this P because it reads P's GPU memory only over a host path (pd.kv.vram-host-path): another P may
     * be reached over a GPU transport.
     */
    public static final String VRAM_HOST_PATH = "vram_host_path";
    public static final String PREFILL_FAILED = "prefill_failed";
    public static final String DECODE_FAILED = "decode_failed";

    private final int maxRetries;

    public RetryPolicy(int maxRetries) {
        this.maxRetries = maxRetries;
    }

    /** The reason a retry is counted under, or empty when the failure is the answer. */
    public static Optional<String> retryReason(Failure f) {
        if (!f.answered() || f.status() >= 500 || f.status() == 404) {
            return Optional.of(f.leg() == Failure.Leg.PREFILL ? PREFILL_FAILED : DECODE_FAILED);
        }
        if (f.leg() == Failure.Leg.DECODE && f.status() == 409 && f.reason() != null
                && RETRIED_DECLINES.contains(f.reason())) {
            return Optional.of(f.reason());
        }
        if (f.leg() == Failure.Leg.DECODE && f.status() == 422 && "vram-host-path".equals(f.reason())) {
            return Optional.of(VRAM_HOST_PATH);
        }
        return Optional.empty();
    }

    /** Whether the attempt after {@code retriesSoFar} retries may be retried once more. */
    public Optional<String> retry(Failure f, int retriesSoFar) {
        return retriesSoFar < maxRetries ? retryReason(f) : Optional.empty();
    }

    /**
     * P holds a lease unless its leg was refused outright: a D failure always follows a lease, and a
     * prefill that got no answer may have exported one before its reply was lost.
     */
    public static boolean abortsProducer(Failure f) {
        return f.leg() == Failure.Leg.DECODE || !f.answered();
    }

    /** Whether the next attempt should avoid this attempt's P (else its D). */
    public static boolean blamesProducer(Failure f) {
        return f.leg() == Failure.Leg.PREFILL || retryReason(f)
                .filter(r -> RETRIED_DECLINES.contains(r) || r.equals(VRAM_HOST_PATH)).isPresent();
    }

    public int maxRetries() {
        return maxRetries;
    }
}
