package io.pdconnector.transfer;

/**
 * Every error status a transfer call can end with: NIXL's C API codes (-1..-14, passed through
 * unchanged by the helper), the helper's own (-100..-104), and a catch-all for codes neither knows.
 */
public enum NativeStatus {
    INVALID_PARAM(-1),
    BACKEND(-2),
    INVALID_STATE(-3),
    NATIVE_EXCEPTION(-4),
    NO_TELEMETRY(-5),
    NOT_FOUND(-6),
    NOT_POSTED(-7),
    MISMATCH(-8),
    NOT_ALLOWED(-9),
    REPOST_ACTIVE(-10),
    UNKNOWN(-11),
    NOT_SUPPORTED(-12),
    REMOTE_DISCONNECT(-13),
    CANCELED(-14),
    HELPER_NO_MEMORY(-100),
    HELPER_BUFFER_TOO_SMALL(-101),
    HELPER_ARGUMENT_REJECTED(-102),
    HELPER_FILE_ERROR(-103),
    HELPER_FILE_IN_USE(-104),
    UNRECOGNIZED(Integer.MIN_VALUE);

    private final int code;

    NativeStatus(int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }

    public static NativeStatus of(int code) {
        for (NativeStatus s : values()) {
            if (s.code == code) {
                return s;
            }
        }
        return UNRECOGNIZED;
    }
}
