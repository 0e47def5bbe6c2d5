package io.pdconnector.api;

import io.pdconnector.api.problem.HostKv;
import io.pdconnector.api.problem.ProblemException;
import io.pdconnector.api.problem.WholeBlocks;
import io.pdconnector.config.AuthRole;
import io.pdconnector.consumer.ConsumerFacade;
import io.pdconnector.protocol.RequestIds;
import io.pdconnector.runtime.ConnectorRuntime;
import io.smallrye.mutiny.Uni;
import io.smallrye.mutiny.infrastructure.Infrastructure;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import jakarta.annotation.security.RolesAllowed;
import jakarta.validation.Valid;
import jakarta.validation.constraints.NotNull;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.DefaultValue;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.zip.CRC32C;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.parameters.Parameter;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;
import org.jboss.resteasy.reactive.server.core.CurrentRequestManager;
import org.jboss.resteasy.reactive.server.spi.ServerHttpResponse;

/** D's API for routers: pull P's KV (verified), release it. */
@Path("/v1/consumer")
@Produces(MediaType.APPLICATION_JSON)
@Consumes(MediaType.APPLICATION_JSON)
@Tag(name = "consumer")
public class ConsumerResource {

    private final ConnectorRuntime runtime;
    private final DecoderPulls pulls;

    public ConsumerResource(ConnectorRuntime runtime, DecoderPulls pulls) {
        this.runtime = runtime;
        this.pulls = pulls;
    }

    @POST
    @Path("/pull")
    // a router's D leg, or the engine beside D pulling for itself (vLLM's plugin, which holds the engine token only)
    @RolesAllowed({AuthRole.ROUTER, AuthRole.ENGINE})
    @Operation(summary = "Pull P's KV; 200 received or recomputed, 409 declined with the reason",
            description = "The KV stays in D's blocks block_ids, in D's KV files (ranks[].kv_file), until the pull"
                    + " is released (DELETE /v1/consumer/requests/{id}, or GET .../kv, which returns it and releases)"
                    + " or pd.consumer.retention passes; an engine on D's host maps the files and reads the blocks"
                    + " in place. kv_checksum and matches_reference are computed only when asked for. With"
                    + " decode_rank, each of D's ranks asks for the same pull and gets the same answer; 409"
                    + " rank-already-asked, rank-already-released, pull-mismatch or not-rank-shared refuses an ask"
                    + " that cannot join, and a rank asking after a decline gets that decline.")
    public Uni<PullResponse> pull(@Valid @NotNull PullRequest request,
            @QueryParam("kv_checksum") @DefaultValue("false") @Parameter(description = "also answer kv_checksum,"
                    + " CRC-32C of the pulled KV as GET .../kv returns it (reads every pulled byte: about 0.1 ms"
                    + " per MiB)") boolean checksum,
            @QueryParam("matches_reference") @DefaultValue("false") @Parameter(description = "also compare the"
                    + " pulled KV with the reference engine's KV of the prompt and answer matches_reference"
                    + " (recomputes the prompt's KV on a worker thread: costs about what a prefill does)")
            boolean checkReference) {
        DecoderPulls.Submitted pull = pulls.submit(request, checksum, checkReference);
        cancelWhenClientGoes(pull.outcome());
        // the reply is built on this request's event loop, or on a worker when it recomputes reference KV
        return pulls.reply(pull, checksum, checkReference,
                checkReference ? Infrastructure.getDefaultWorkerPool() : eventLoopOfThisRequest());
    }

    /** The Vert.x context this (non-blocking) resource method runs on; a worker if there is none. */
    private static Executor eventLoopOfThisRequest() {
        Context context = Vertx.currentContext();
        if (context == null) {
            return Infrastructure.getDefaultWorkerPool();
        }
        return task -> context.runOnContext(ignored -> task.run());
    }

    @GET
    @Path("/requests/{id}/kv")
    @RolesAllowed(AuthRole.ENGINE)
    @Produces(MediaType.APPLICATION_OCTET_STREAM)
    @Operation(summary = "The pulled KV bytes (per block, each rank's slice in rank order); then releases D's blocks")
    public Response readKv(
            @PathParam("id") @Parameter(schema = @Schema(pattern = RequestIds.SCHEMA_PATTERN),
                    description = RequestIds.SCHEMA_DESCRIPTION) String id) {
        ConsumerFacade consumer = consumer();
        HostKv.require(runtime.config(), "a KV read-out");
        WholeBlocks.require(runtime.config(), "a KV read-out");
        byte[] kv = consumer.readKv(id);
        CRC32C crc = new CRC32C();
        crc.update(kv);
        consumer.release(id);
        return Response.ok(kv).header("X-KV-Checksum", PullReplies.checksumText(crc.getValue())).build();
    }

    @GET
    @Path("/requests/{id}")
    @RolesAllowed({AuthRole.ENGINE, AuthRole.OPERATOR})
    @Operation(summary = "Where a pull is: state, reason, time to its deadline, local blocks")
    public PullStatusResponse status(
            @PathParam("id") @Parameter(schema = @Schema(pattern = RequestIds.SCHEMA_PATTERN),
                    description = RequestIds.SCHEMA_DESCRIPTION) String id) {
        return PullStatusResponse.of(consumer().status(id));
    }

    @DELETE
    @Path("/requests/{id}")
    // the release of what a router pulled and an engine would have read: either may give it up, and an operator
    @RolesAllowed({AuthRole.OPERATOR, AuthRole.ROUTER, AuthRole.ENGINE})
    @Operation(summary = "Release a pull: frees its local blocks, or aborts it if it is still in flight",
            description = "204 once D's blocks are free again (an engine that read them in place from D's KV"
                    + " files may then trust what it copied); 404 if the pull is unknown, e.g. released already"
                    + " by pd.consumer.retention, when its blocks may since hold another pull's KV. With"
                    + " decode_rank, that rank of a pull D's ranks share is done: 204 each time, and the blocks are"
                    + " free once every rank has released (the last 204 vouches for them); an undecided pull is"
                    + " aborted for every rank. 409 rank-already-released for a rank releasing twice,"
                    + " not-rank-shared for a pull asked for without decode_rank")
    public void release(
            @PathParam("id") @Parameter(schema = @Schema(pattern = RequestIds.SCHEMA_PATTERN),
                    description = RequestIds.SCHEMA_DESCRIPTION) String id,
            @QueryParam("decode_rank") @Parameter(schema = @Schema(type = SchemaType.INTEGER, minimum = "0"),
                    description = "the D rank releasing its share of a pull D's ranks share (0 to pd.tp-size - 1,"
                            + " else 400 invalid-decode-rank); absent: release or abort the pull for every rank")
            String decodeRank) {
        pulls.release(id, decodeRank);
    }

    /** A client that disconnects before its answer cancels its pull, which D then aborts. */
    private static void cancelWhenClientGoes(Future<?> pull) {
        ServerHttpResponse response = CurrentRequestManager.get().serverResponse();
        response.addCloseHandler(() -> pull.cancel(false));
        if (response.closed()) {
            pull.cancel(false);
        }
    }

    private ConsumerFacade consumer() {
        return runtime.consumer().orElseThrow(() -> ProblemException.roleNotServed("consumer"));
    }
}
