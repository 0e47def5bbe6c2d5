package io.pdconnector.api.openai;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.pdconnector.router.ClientSignal;
import io.pdconnector.router.Routed;
import io.pdconnector.router.RouterService;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.StreamingOutput;
import org.jboss.resteasy.reactive.server.core.CurrentRequestManager;
import org.jboss.resteasy.reactive.server.spi.ServerHttpResponse;

/**
 * A router's OpenAI answers: the request goes through {@link RouterService} (P leg, then D leg), and
 * D's reply comes back as D gave it, streamed as it arrives, with where the time went
 * ({@code Server-Timing}), how many attempts were retried ({@code X-PD-Retries}) and which P and D served it.
 */
@ApplicationScoped
class RoutedAnswers {

    static final String RETRIES = "X-PD-Retries";

    private final RouterService router;

    RoutedAnswers(RouterService router) {
        this.router = router;
    }

    boolean routing() {
        return router.active();
    }

    Response answer(String path, ObjectNode client, String requestId) {
        ClientSignal signal = new ClientSignal();
        ServerHttpResponse response = CurrentRequestManager.get().serverResponse();
        response.addCloseHandler(signal::clientGone);
        if (response.closed()) {
            signal.clientGone();
        }
        Routed r = router.route(path, client, requestId, signal);
        Response.ResponseBuilder b = Response.status(r.status()).type(r.contentType())
                .entity(r.streaming() ? (StreamingOutput) r::writeTo : r.body())
                .header(OpenAiResource.REQUEST_ID_HEADER, requestId)
                .header(RETRIES, r.retries().size())
                .header("Server-Timing", r.serverTiming())
                .header("X-PD-Producer", r.pick().producer().engineId())
                .header("X-PD-Decoder", r.pick().decoder().engineId());
        if (!r.retries().isEmpty()) {
            b.header("X-PD-Retry-Reasons", String.join(",", r.retries()));
        }
        if (r.streaming()) {
            b.header("Cache-Control", "no-cache");
        }
        return b.build();
    }
}
