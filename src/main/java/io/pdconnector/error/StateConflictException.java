package io.pdconnector.error;

/**
 * A command the request's current state does not allow: a second finish, an upload after finish,
 * a reused id still held (409); nothing changed.
 */
public final class StateConflictException extends PdException {

    public StateConflictException(String requestId, String message) {
        super("wrong-state", message, requestId, null);
    }
}
