package io.pdconnector.lease;

/** A command that the request's current state does not allow (a second finish, an upload after finish). */
public final class RequestStateException extends RuntimeException {

    private final String requestId;

    public RequestStateException(String requestId, String message) {
        super(message);
        this.requestId = requestId;
    }

    public String requestId() {
        return requestId;
    }
}
