package io.pdconnector.api.engine;

import io.pdconnector.api.problem.ProblemException;
import io.pdconnector.config.AuthRole;
import io.pdconnector.runtime.ConnectorRuntime;
import jakarta.annotation.security.RolesAllowed;
import jakarta.validation.Valid;
import jakarta.validation.constraints.NotNull;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/**
 * The engine plugin's one call per step (docs/engine-integration.md, "Grants"): commits of requests to
 * granted blocks and slots, aborts, returned grants and a new grant, all submitted to P's loop before
 * any is awaited, so they are applied in one step and an engine pays one loopback round trip per step.
 * The same call is served on the engine socket ({@link EngineSocketCalls}); {@link EngineBatches} does it.
 */
@Path("/v1/producer/batch")
@Produces(MediaType.APPLICATION_JSON)
@Consumes(MediaType.APPLICATION_JSON)
@Tag(name = "producer")
public class EngineBatchResource {

    private final ConnectorRuntime runtime;

    public EngineBatchResource(ConnectorRuntime runtime) {
        this.runtime = runtime;
    }

    @POST
    @RolesAllowed(AuthRole.ENGINE)
    @Operation(summary = "An engine step's commits, aborts and returned grants, then a new grant; one result per item")
    public EngineBatchResponse batch(@Valid @NotNull EngineBatchRequest request) {
        return EngineBatches.run(runtime.producer().orElseThrow(() -> ProblemException.roleNotServed("producer")),
                request);
    }
}
