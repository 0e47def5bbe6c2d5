package io.pdconnector.protocol;

import io.pdconnector.error.InvalidInputException;
import java.util.regex.Pattern;

/**
 * The one rule for request ids: they travel inside notifications ({@code <id>:<consumers>:<nonce>},
 * {@code HB:<id>:<nonce>,...}) as UTF-8, so the separators ':' and ',', control characters and unpaired
 * surrogates (which UTF-8 cannot carry) are not allowed, and they are 1-256 characters, not all
 * blank, and not {@code HB} (whose read notification {@code HB:<consumers>} would read as a
 * heartbeat). The HTTP layer validates with {@link #PATTERN} plus not-blank, the loops and the
 * notification parser with {@link #isValid}: the same rule.
 */
public final class RequestIds {

    public static final int MAX_LENGTH = 256;
    /**
     * For bean validation ({@code @Pattern}); {@code \p{Cc}} is exactly {@link Character#isISOControl},
     * {@code \p{Cs}} an unpaired surrogate (java.util.regex matches a paired one as one code point).
     */
    public static final String PATTERN = "(?!HB\\z)[^:,\\p{Cc}\\p{Cs}]{1," + MAX_LENGTH + "}";

    /**
     * The same rule for the OpenAPI document, in the regex dialect JSON Schema uses (ECMA-262: no
     * {@code \p{..}} classes, no {@code \z}): 1-256 characters, no ':' or ',', no control character.
     * Not blank, not {@code HB} and no unpaired surrogate are in the description; {@link #PATTERN}
     * enforces all of it.
     */
    public static final String SCHEMA_PATTERN = "^[^:,\\u0000-\\u001f\\u007f-\\u009f]{1," + MAX_LENGTH + "}$";
    public static final String SCHEMA_DESCRIPTION = "1-256 characters, not all blank, without ':', ',', control"
            + " characters or unpaired surrogates, and not HB (request ids travel inside NIXL notifications)";

    private static final Pattern VALID = Pattern.compile(PATTERN);

    private RequestIds() {
    }

    public static boolean isValid(String id) {
        return id != null && !id.isBlank() && VALID.matcher(id).matches();
    }

    public static String require(String id) {
        if (!isValid(id)) {
            throw InvalidInputException.of("request id must be 1.." + MAX_LENGTH
                    + " printable characters without ':' or ',', not HB, got "
                    + (id == null ? "null" : "'" + id + "'"));
        }
        return id;
    }
}
