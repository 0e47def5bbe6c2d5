package io.pdconnector.nixl;

/** NIXL or the project's helper cannot be loaded: the service must not start pretending otherwise. */
public final class NixlUnavailableException extends RuntimeException {

    public NixlUnavailableException(String message) {
        super(message);
    }

    public NixlUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
