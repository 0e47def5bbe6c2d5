package io.pdconnector.protocol;

import io.pdconnector.error.InvalidInputException;

/** Request ids travel inside notifications, so their separators are not allowed in them. */
public final class RequestIds {

    public static final int MAX_LENGTH = 256;

    private RequestIds() {
    }

    public static boolean isValid(String id) {
        return id != null && !id.isBlank() && id.length() <= MAX_LENGTH && id.indexOf(':') < 0
                && id.indexOf(',') < 0 && id.chars().noneMatch(Character::isISOControl);
    }

    public static String require(String id) {
        if (!isValid(id)) {
            throw InvalidInputException.of("request id must be 1.." + MAX_LENGTH
                    + " printable characters without ':' or ',', got " + (id == null ? "null" : "'" + id + "'"));
        }
        return id;
    }
}
