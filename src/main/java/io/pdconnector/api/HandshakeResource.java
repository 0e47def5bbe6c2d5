package io.pdconnector.api;

import io.pdconnector.api.problem.ProblemException;
import io.pdconnector.config.AuthRole;
import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.runtime.ConnectorRuntime;
import jakarta.annotation.security.RolesAllowed;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import java.util.List;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/**
 * This producer's per-rank handshake metadata, for operators and tools; decoders take it from the
 * registry record ({@code /v1/registry/self}), never from an address a request names.
 */
@Path("/v1/handshake")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "control plane")
public class HandshakeResource {

    private final ConnectorRuntime runtime;

    public HandshakeResource(ConnectorRuntime runtime) {
        this.runtime = runtime;
    }

    @GET
    @RolesAllowed({AuthRole.PEER, AuthRole.OPERATOR})
    @Operation(summary = "Per-rank NIXL metadata, KV and lease-slot regions, geometry and compatibility hash")
    public List<HandshakeMetadata> handshake() {
        if (!runtime.config().role().producer()) {
            throw ProblemException.roleNotServed("producer");
        }
        List<HandshakeMetadata> ranks = runtime.registry().self().ranks();
        if (ranks.isEmpty()) {
            throw new IllegalStateException("the producer has not published its metadata");
        }
        return ranks;
    }
}
