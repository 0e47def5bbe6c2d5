package io.pdconnector.transfer;

/**
 * A failed transfer call, typed by its status. The message names the call and the raw code, so a
 * log line alone tells which downcall failed and how.
 */
public sealed class TransferException extends RuntimeException {

    private final String call;
    private final int code;

    TransferException(String call, int code, String detail) {
        super(call + " failed: " + NativeStatus.of(code) + " (" + code + ")" + (detail.isEmpty() ? "" : ": " + detail));
        this.call = call;
        this.code = code;
    }

    public String call() {
        return call;
    }

    public int code() {
        return code;
    }

    public NativeStatus status() {
        return NativeStatus.of(code);
    }

    public static TransferException of(String call, int code) {
        return of(call, code, "");
    }

    public static TransferException of(String call, int code, String detail) {
        return switch (NativeStatus.of(code)) {
            case INVALID_PARAM, HELPER_ARGUMENT_REJECTED -> new InvalidArgument(call, code, detail);
            case NOT_FOUND -> new NotFound(call, code, detail);
            case REMOTE_DISCONNECT -> new RemoteDisconnected(call, code, detail);
            case CANCELED -> new Canceled(call, code, detail);
            case REPOST_ACTIVE -> new RepostActive(call, code, detail);
            case BACKEND -> new BackendFailure(call, code, detail);
            case INVALID_STATE, NOT_POSTED, NOT_ALLOWED, MISMATCH -> new InvalidState(call, code, detail);
            case NOT_SUPPORTED, NO_TELEMETRY -> new Unsupported(call, code, detail);
            case HELPER_NO_MEMORY -> new OutOfNativeMemory(call, code, detail);
            case HELPER_BUFFER_TOO_SMALL -> new BufferTooSmall(call, code, detail);
            case HELPER_FILE_ERROR -> new FileError(call, code, detail);
            case HELPER_FILE_IN_USE -> new FileInUse(call, code, detail);
            case NATIVE_EXCEPTION, UNKNOWN, UNRECOGNIZED -> new NativeFailure(call, code, detail);
        };
    }

    /** An argument the library refused (ours are checked in Java first, so this one got past them). */
    public static final class InvalidArgument extends TransferException {
        InvalidArgument(String call, int code, String detail) { super(call, code, detail); }
    }

    /** The peer or its memory is not known (not loaded, invalidated, or deregistered). */
    public static final class NotFound extends TransferException {
        NotFound(String call, int code, String detail) { super(call, code, detail); }
    }

    public static final class RemoteDisconnected extends TransferException {
        RemoteDisconnected(String call, int code, String detail) { super(call, code, detail); }
    }

    public static final class Canceled extends TransferException {
        Canceled(String call, int code, String detail) { super(call, code, detail); }
    }

    /** A second post of a request that is still in flight. */
    public static final class RepostActive extends TransferException {
        RepostActive(String call, int code, String detail) { super(call, code, detail); }
    }

    /** The backend (UCX) failed the operation; NIXL's C API folds several causes into this one. */
    public static final class BackendFailure extends TransferException {
        BackendFailure(String call, int code, String detail) { super(call, code, detail); }
    }

    public static final class InvalidState extends TransferException {
        InvalidState(String call, int code, String detail) { super(call, code, detail); }
    }

    public static final class Unsupported extends TransferException {
        Unsupported(String call, int code, String detail) { super(call, code, detail); }
    }

    public static final class OutOfNativeMemory extends TransferException {
        OutOfNativeMemory(String call, int code, String detail) { super(call, code, detail); }
    }

    public static final class BufferTooSmall extends TransferException {
        BufferTooSmall(String call, int code, String detail) { super(call, code, detail); }
    }

    /** A shared-memory file could not be created, locked or sized (a missing or read-only directory). */
    public static final class FileError extends TransferException {
        FileError(String call, int code, String detail) { super(call, code, detail); }
    }

    /** Another live process maps the same shared-memory file (two instances with one engine id on a host). */
    public static final class FileInUse extends TransferException {
        FileInUse(String call, int code, String detail) { super(call, code, detail); }
    }

    /**
     * A notification over {@link TransferAgent#MAX_NOTIFICATION_BYTES}, refused before it was sent;
     * typed as the helper's argument refusal, so a caller counting failed sends counts it too.
     */
    public static final class NotificationTooLarge extends TransferException {
        NotificationTooLarge(String call, int length) {
            super(call, NativeStatus.HELPER_ARGUMENT_REJECTED.code(), "a notification of " + length
                    + " bytes is over TransferAgent.MAX_NOTIFICATION_BYTES (" + TransferAgent.MAX_NOTIFICATION_BYTES + ")");
        }
    }

    /** Throws {@link NotificationTooLarge} for a notification over {@link TransferAgent#MAX_NOTIFICATION_BYTES}. */
    public static void checkNotificationSize(String call, byte[] notification) {
        if (notification != null && notification.length > TransferAgent.MAX_NOTIFICATION_BYTES) {
            throw new NotificationTooLarge(call, notification.length);
        }
    }

    /** A C++ exception caught at NIXL's boundary, or a code no one documented. */
    public static final class NativeFailure extends TransferException {
        NativeFailure(String call, int code, String detail) { super(call, code, detail); }
    }
}
