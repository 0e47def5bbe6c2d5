package io.pdconnector.cuda;

/** {@code pd.kv.memory=vram} cannot be served here; the message is the one sentence naming why. */
public final class VramStartupException extends RuntimeException {

    public VramStartupException(String message) {
        super(message);
    }

    public VramStartupException(String message, Throwable cause) {
        super(message, cause);
    }
}
