package io.pdconnector.api;

import io.pdconnector.api.problem.HostKv;
import io.pdconnector.api.problem.ProblemException;
import io.pdconnector.config.AuthRole;
import io.pdconnector.producer.ProducerFacade;
import io.pdconnector.protocol.InvalidKvTransferParamsException;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.protocol.RequestIds;
import io.pdconnector.runtime.ConnectorRuntime;
import jakarta.annotation.security.RolesAllowed;
import jakarta.validation.Valid;
import jakarta.validation.constraints.NotNull;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.PUT;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;
import java.util.Map;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.parameters.Parameter;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/**
 * P's API: routers prefill a prompt with the reference engine; an engine that computes the KV
 * itself reserves blocks, writes them (through the shared files, or by upload) and finishes.
 * Either way the answer is the kv_transfer_params to forward to D. See docs/engine-integration.md.
 */
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
    @RolesAllowed(AuthRole.ROUTER)
    @Operation(summary = "Prefill with the reference engine and return kv_transfer_params to forward to D")
    public PrefillResponse prefill(@Valid @NotNull PrefillRequest request) {
        ProducerFacade producer = producer();
        HostKv.require(runtime.config(), "the reference engine's prefill");
        requireRemoteDecode(request.kvTransferParams());
        int[] tokens = PromptInput.tokens(request.prompt(), request.tokenIds());
        KvTransferParams params = producer.prefill(request.requestId(), tokens);
        return new PrefillResponse(request.requestId(), tokens.length, params.toMap());
    }

    @POST
    @Path("/requests")
    @RolesAllowed(AuthRole.ENGINE)
    @Operation(summary = "Reserve blocks, a lease slot and a nonce for an engine that writes the KV itself; "
            + "201 with the block ids, each rank's KV file and the layout")
    public Response reserve(@Valid @NotNull ReserveRequest request, @Context UriInfo uri) {
        ProducerFacade producer = producer();
        requireRemoteDecode(request.kvTransferParams());
        var reservation = producer.reserve(request.requestId(), request.numTokens());
        return Response.created(uri.getAbsolutePathBuilder().path(request.requestId()).build())
                .entity(ReservationResponse.of(reservation, runtime.geometry())).build();
    }

    @PUT
    @Path("/requests/{id}/kv")
    @RolesAllowed(AuthRole.ENGINE)
    @Consumes(MediaType.APPLICATION_OCTET_STREAM)
    @Operation(summary = "Upload a reserved request's KV (for each block, each rank's slice in rank order); "
            + "only before finish, exactly upload_bytes long")
    public void upload(
            @PathParam("id") @Parameter(schema = @Schema(pattern = RequestIds.SCHEMA_PATTERN),
                    description = RequestIds.SCHEMA_DESCRIPTION) String id, byte[] kv) {
        ProducerFacade producer = producer();
        HostKv.require(runtime.config(), "a KV upload");
        producer.writeKv(id, kv);
    }

    @POST
    @Path("/requests/{id}/finish")
    @RolesAllowed(AuthRole.ENGINE)
    @Consumes(MediaType.WILDCARD) // an engine finishes with an empty POST, which carries no content type
    @Operation(summary = "The engine wrote the KV: export the lease (slot written on every rank) and return "
            + "kv_transfer_params; once only")
    public PrefillResponse finish(
            @PathParam("id") @Parameter(schema = @Schema(pattern = RequestIds.SCHEMA_PATTERN),
                    description = RequestIds.SCHEMA_DESCRIPTION) String id) {
        KvTransferParams params = producer().finish(id);
        return new PrefillResponse(id, params.remoteNumTokens(), params.toMap());
    }

    @GET
    @Path("/requests/{id}")
    @RolesAllowed({AuthRole.ENGINE, AuthRole.OPERATOR})
    @Operation(summary = "Where a request's lease is: state, slot, nonce, time left, blocks, ranks finished")
    public LeaseStatusResponse status(
            @PathParam("id") @Parameter(schema = @Schema(pattern = RequestIds.SCHEMA_PATTERN),
                    description = RequestIds.SCHEMA_DESCRIPTION) String id) {
        return LeaseStatusResponse.of(producer().status(id));
    }

    @DELETE
    @Path("/requests/{id}")
    // the engine gives up a reservation, a router drops the lease of a failed decode, an operator cleans up
    @RolesAllowed({AuthRole.OPERATOR, AuthRole.ROUTER, AuthRole.ENGINE})
    @Operation(summary = "Abort (a reserved request too): zero the request's slots, then free its blocks; "
            + "a late reader is declined")
    public void abort(
            @PathParam("id") @Parameter(schema = @Schema(pattern = RequestIds.SCHEMA_PATTERN),
                    description = RequestIds.SCHEMA_DESCRIPTION) String id) {
        producer().abort(id);
    }

    private static void requireRemoteDecode(Map<String, Object> kvTransferParams) {
        if (!Boolean.TRUE.equals(kvTransferParams.get("do_remote_decode"))) {
            throw new InvalidKvTransferParamsException("a prefill for a remote decoder needs do_remote_decode: true");
        }
    }

    private ProducerFacade producer() {
        return runtime.producer().orElseThrow(() -> ProblemException.roleNotServed("producer"));
    }
}
