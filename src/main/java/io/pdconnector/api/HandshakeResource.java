package io.pdconnector.api;

import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.runtime.ConnectorRuntime;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import java.util.List;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/** The embedded control plane's answer to a decoder: this producer's per-rank handshake metadata. */
@Path("/v1/handshake")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "control plane")
public class HandshakeResource {

    private final ConnectorRuntime runtime;

    public HandshakeResource(ConnectorRuntime runtime) {
        this.runtime = runtime;
    }

    @GET
    @Operation(summary = "Per-rank NIXL metadata, KV and lease-slot regions, geometry and compatibility hash")
    public List<HandshakeMetadata> handshake() {
        if (!runtime.config().role().producer()) {
            throw ProblemException.roleNotServed("producer");
        }
        return runtime.registry().lookup(runtime.config().engineId())
                .orElseThrow(() -> new IllegalStateException("the producer has not published its metadata"));
    }
}
