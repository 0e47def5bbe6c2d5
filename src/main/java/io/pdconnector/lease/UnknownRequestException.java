package io.pdconnector.lease;

/** A command named a request this side does not hold (never seen, or already released). */
public final class UnknownRequestException extends RuntimeException {

    private final String requestId;

    public UnknownRequestException(String side, String requestId) {
        super("no " + side + " request " + requestId + " is held here");
        this.requestId = requestId;
    }

    public String requestId() {
        return requestId;
    }
}
