package io.pdconnector.api;

import io.pdconnector.api.problem.Problem;
import io.pdconnector.api.problem.ProblemException;
import io.pdconnector.api.problem.ProblemMappers;
import io.pdconnector.config.ConnectorSettings;
import io.pdconnector.config.PdConfig;
import io.quarkus.runtime.configuration.MemorySize;
import io.vertx.ext.web.RoutingContext;
import jakarta.ws.rs.core.HttpHeaders;
import org.jboss.resteasy.reactive.server.ServerRequestFilter;
import org.jboss.resteasy.reactive.server.SimpleResourceInfo;

/**
 * Per-endpoint request body limits, checked before a body is read: the KV upload
 * ({@code PUT /v1/producer/requests/{id}/kv}) may be as large as {@code pd.http.max-upload-body} (by
 * default the instance's whole KV), every other endpoint takes JSON of at most
 * {@code pd.http.max-json-body}. A body whose {@code Content-Length} is over the limit is answered
 * {@code 413} ({@code body-too-large}) without being read; a chunked body is cut off with {@code 413}
 * when it passes the same limit (Quarkus's body reader enforces the per-request limit set here).
 * {@code quarkus.http.limits.max-body-size} stays only the outer bound of every route.
 */
public class BodyLimits {

    /** Quarkus's per-request body limit (VertxHttpRecorder.MAX_REQUEST_SIZE_KEY), honoured by its body reader. */
    static final String MAX_REQUEST_SIZE_KEY = "io.quarkus.max-request-size";
    /** The problem reason of a refused body, here and for the HTTP layer's own 413s. */
    static final String REASON = ProblemMappers.BODY_TOO_LARGE;
    /** A body is read into one array. */
    private static final long MAX_ARRAY = Integer.MAX_VALUE - 8;

    private final long json;
    private final long upload;

    public BodyLimits(PdConfig pd) {
        this.json = pd.http().maxJsonBody().asLongValue();
        this.upload = pd.http().maxUploadBody().map(MemorySize::asLongValue).orElseGet(() -> wholeKv(pd));
    }

    /** Every block of every rank: the largest upload a reservation can ask for. */
    static long wholeKv(PdConfig pd) {
        long bytes = Math.multiplyExact(ConnectorSettings.geometry(pd.model()).blockBytes(1),
                (long) pd.kv().numBlocks());
        return Math.min(bytes, MAX_ARRAY);
    }

    @ServerRequestFilter
    public void limit(SimpleResourceInfo resource, HttpHeaders headers, RoutingContext routing) {
        boolean upload = resource.getResourceClass() == ProducerResource.class
                && "upload".equals(resource.getMethodName());
        long limit = upload ? this.upload : json;
        String declared = headers.getHeaderString(HttpHeaders.CONTENT_LENGTH);
        if (declared != null && length(declared) > limit) {
            throw new ProblemException(Problem.of(413, REASON, "Body too large", "the request body is "
                    + declared.strip() + " bytes, more than the " + limit + " bytes "
                    + (upload ? "a KV upload may have (pd.http.max-upload-body)"
                            : "a JSON request may have (pd.http.max-json-body)")));
        }
        routing.put(MAX_REQUEST_SIZE_KEY, limit);
    }

    private static long length(String header) {
        try {
            return Long.parseLong(header.strip());
        } catch (NumberFormatException e) {
            return Long.MAX_VALUE; // the HTTP layer refuses a malformed Content-Length before this
        }
    }
}
