package io.pdconnector.api;

import io.pdconnector.config.AuthRole;
import io.pdconnector.config.PdConfig;
import io.pdconnector.runtime.ConnectorRuntime;
import jakarta.annotation.security.RolesAllowed;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/** The KV geometry an engine beside this instance must match (a router holds no KV: 404). */
@Path("/v1/kv-layout")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "operations")
public class KvLayoutResource {

    private final ConnectorRuntime runtime;

    public KvLayoutResource(ConnectorRuntime runtime) {
        this.runtime = runtime;
    }

    @GET
    @RolesAllowed({AuthRole.ENGINE, AuthRole.OPERATOR})
    @Operation(summary = "The KV geometry (layers, heads, head dim, block tokens, dtype bytes, TP) an engine must match")
    public KvLayoutResponse layout() {
        PdConfig config = runtime.config();
        if (!config.role().producer() && !config.role().consumer()) {
            throw ProblemException.roleNotServed("producer or consumer");
        }
        return KvLayoutResponse.of(config.engineId(), config.role().name(), config.tpSize(),
                config.kv().numBlocks(), runtime.geometry(), config.lease().verification());
    }
}
