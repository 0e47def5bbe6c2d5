package io.pdconnector.error;

/**
 * A command the request's current state does not allow: a second finish, an upload after finish,
 * a reused id still held (409); nothing changed. The reason is {@code wrong-state} unless a more
 * precise one tells the caller what to do differently (a decode rank asking twice, say).
 */
public final class StateConflictException extends PdException {

    public StateConflictException(String requestId, String message) {
        this("wrong-state", requestId, message);
    }

    public StateConflictException(String reason, String requestId, String message) {
        super(reason, message, requestId, null);
    }
}
