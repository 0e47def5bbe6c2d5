package io.pdconnector.error;

/** The caller's input is unusable (400); nothing changed. */
public non-sealed class InvalidInputException extends PdException {

    public InvalidInputException(String reason, String message) {
        super(reason, message, null, null);
    }

    /** The general case: a field or argument out of its rules. */
    public static InvalidInputException of(String message) {
        return new InvalidInputException("invalid-argument", message);
    }
}
