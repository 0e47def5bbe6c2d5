package io.pdconnector.api;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.validation.ConstraintViolation;
import jakarta.validation.ConstraintViolationException;
import jakarta.validation.Validator;
import java.util.Set;

/**
 * Reads an OpenAI body kept as its JSON tree into the typed request, with the same checks a typed
 * parameter gets: the tree is what a router forwards (every field the client sent, read or not), the
 * typed request is what this instance checks and serves.
 */
@ApplicationScoped
public class RequestBodies {

    private final ObjectMapper json;
    private final Validator validator;

    RequestBodies(ObjectMapper json, Validator validator) {
        this.json = json;
        this.validator = validator;
    }

    public <T> T read(ObjectNode body, Class<T> type) throws JsonProcessingException {
        T request = json.treeToValue(body, type);
        Set<ConstraintViolation<T>> violations = validator.validate(request);
        if (!violations.isEmpty()) {
            throw new ConstraintViolationException(violations);
        }
        return request;
    }
}
