package io.pdconnector.router;

/**
 * Request ids of a request's attempts: the client's id first, then {@code <id>-retry<n>}. Each attempt
 * has its own id, so a late abort of an earlier attempt's lease can never hit a later one's, and a
 * decoder still winding up the earlier pull does not refuse the id.
 */
final class RequestAttempts {

    static final int MAX_LENGTH = 256;

    private RequestAttempts() {
    }

    static String id(String requestId, int attempt) {
        if (attempt == 0) {
            return requestId;
        }
        String suffix = "-retry" + attempt;
        int keep = Math.min(requestId.length(), MAX_LENGTH - suffix.length());
        if (keep > 0 && keep < requestId.length() && Character.isHighSurrogate(requestId.charAt(keep - 1))) {
            keep--; // never split a surrogate pair: an unpaired surrogate is not a valid id
        }
        return requestId.substring(0, keep) + suffix;
    }
}
