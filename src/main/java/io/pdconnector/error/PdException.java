package io.pdconnector.error;

/**
 * Every failure pd-connector reports to a caller, in one sealed hierarchy: the category says what
 * the caller did or should do (fix the input, pick another request, retry later, blame the peer),
 * the reason is the machine-readable word a problem answer carries, the message is the sentence.
 * The API maps the categories in one place; anything that is not a {@code PdException} is a bug
 * and is answered 500 without detail.
 */
public abstract sealed class PdException extends RuntimeException
        permits InvalidInputException, UnknownRequestException, StateConflictException,
        IncompatiblePeerException, UnavailableException, PeerFailureException, UntrustedPeerException,
        ClientGoneException {

    private final String reason;
    private final String requestId;

    PdException(String reason, String message, String requestId, Throwable cause) {
        super(message, cause);
        this.reason = reason;
        this.requestId = requestId;
    }

    /** The machine-readable reason, kebab-case (the problem type's last word). */
    public final String reason() {
        return reason;
    }

    /** The request the failure concerns, or null. */
    public final String requestId() {
        return requestId;
    }
}
