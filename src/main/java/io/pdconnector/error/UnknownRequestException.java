package io.pdconnector.error;

/** A command named a request this side does not hold, never seen or already released (404). */
public final class UnknownRequestException extends PdException {

    public UnknownRequestException(String side, String requestId) {
        super("unknown-request", "no " + side + " request " + requestId + " is held here", requestId, null);
    }
}
