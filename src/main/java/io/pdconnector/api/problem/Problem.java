package io.pdconnector.api.problem;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;

/**
 * An RFC 9457 problem document. {@code type} is stable per cause ({@code urn:pd-connector:problem:<reason>}),
 * {@code reason} repeats its last part for clients that prefer a plain token, {@code detail} is the sentence.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record Problem(
        String type,
        String title,
        int status,
        String detail,
        String instance,
        String reason,
        @JsonProperty("request_id") String requestId,
        List<Violation> violations) {

    public static final String MEDIA_TYPE = "application/problem+json";
    private static final String TYPE_PREFIX = "urn:pd-connector:problem:";

    public static Problem of(int status, String reason, String title, String detail) {
        return new Problem(TYPE_PREFIX + reason, title, status, detail, null, reason, null, null);
    }

    public Problem forRequest(String id) {
        return new Problem(type, title, status, detail, instance, reason, id, violations);
    }

    public Problem at(String path) {
        return new Problem(type, title, status, detail, path, reason, requestId, violations);
    }

    public Problem withViolations(List<Violation> list) {
        return new Problem(type, title, status, detail, instance, reason, requestId, list);
    }

    /** One failed constraint: where in the input and what is wrong. */
    public record Violation(String field, String message) {
    }
}
