package io.pdconnector.api;

import io.pdconnector.producer.InvalidKvTransferParamsException;
import io.pdconnector.producer.KvTransferParams;
import io.pdconnector.producer.Producer;
import io.pdconnector.runtime.ConnectorRuntime;
import jakarta.validation.Valid;
import jakarta.validation.constraints.NotNull;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/** P's API for routers: prefill a prompt for a remote decoder, abort a request. */
@Path("/v1/producer")
@Produces(MediaType.APPLICATION_JSON)
@Consumes(MediaType.APPLICATION_JSON)
@Tag(name = "producer")
public class ProducerResource {

    private final ConnectorRuntime runtime;

    public ProducerResource(ConnectorRuntime runtime) {
        this.runtime = runtime;
    }

    @POST
    @Path("/prefill")
    @Operation(summary = "Prefill with the reference engine and return kv_transfer_params to forward to D")
    public PrefillResponse prefill(@Valid @NotNull PrefillRequest request) {
        Producer producer = producer();
        if (!Boolean.TRUE.equals(request.kvTransferParams().get("do_remote_decode"))) {
            throw new InvalidKvTransferParamsException("a prefill for a remote decoder needs do_remote_decode: true");
        }
        int[] tokens = PromptInput.tokens(request.prompt(), request.tokenIds());
        KvTransferParams params = producer.prefill(request.requestId(), tokens);
        return new PrefillResponse(request.requestId(), tokens.length, params.toMap());
    }

    @DELETE
    @Path("/requests/{id}")
    @Operation(summary = "Abort: zero the request's slots, then free its blocks; a late reader is declined")
    public void abort(@PathParam("id") String id) {
        producer().abort(id);
    }

    private Producer producer() {
        return runtime.producer().orElseThrow(() -> ProblemException.roleNotServed("producer"));
    }
}
