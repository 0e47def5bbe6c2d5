package io.pdconnector.router;

/**
 * One failed leg of an attempt: which leg, the HTTP status it answered (0: no answer at all, the
 * connection failed or the deadline passed) and the problem reason it gave, if any.
 */
public record Failure(Leg leg, int status, String reason, String detail) {

    public enum Leg {
        PREFILL,
        DECODE
    }

    public static Failure noAnswer(Leg leg, String detail) {
        return new Failure(leg, 0, null, detail);
    }

    public boolean answered() {
        return status != 0;
    }
}
