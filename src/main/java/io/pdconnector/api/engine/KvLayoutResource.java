package io.pdconnector.api.engine;

import io.pdconnector.api.problem.ProblemException;
import io.pdconnector.config.AuthRole;
import io.pdconnector.config.KvMemory;
import io.pdconnector.config.PdConfig;
import io.pdconnector.runtime.ConnectorRuntime;
import io.pdconnector.transfer.PoolShare;
import io.quarkus.security.identity.SecurityIdentity;
import jakarta.annotation.security.RolesAllowed;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import java.util.List;
import java.util.function.Supplier;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/**
 * The KV geometry an engine beside this instance must match (a router holds no KV: 404); with
 * {@code pd.kv.memory=vram}, for the engine alone, the ranks' VRAM pools it opens over CUDA IPC (an IPC handle
 * gives whoever holds it the engine's KV on that GPU, so the operator's token does not see them).
 */
@Path("/v1/kv-layout")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "operations")
public class KvLayoutResource {

    private final ConnectorRuntime runtime;
    private final SecurityIdentity caller;
    private final EngineSocketServer engineSocket;

    public KvLayoutResource(ConnectorRuntime runtime, SecurityIdentity caller, EngineSocketServer engineSocket) {
        this.runtime = runtime;
        this.caller = caller;
        this.engineSocket = engineSocket;
    }

    @GET
    @RolesAllowed({AuthRole.ENGINE, AuthRole.OPERATOR})
    @Operation(summary = "The KV geometry (layers, heads, head dim, block tokens, dtype bytes, TP) an engine must match")
    public KvLayoutResponse layout() {
        PdConfig config = runtime.config();
        if (!config.role().producer() && !config.role().consumer()) {
            throw ProblemException.roleNotServed("producer or consumer");
        }
        KvLayoutResponse plain = KvLayoutResponse.of(config.engineId(), config.role().name(), config.tpSize(),
                config.kv().numBlocks(), runtime.geometry(), config.lease().verification());
        KvLayoutResponse layout = engineSocket.path().map(p -> plain.withEngineSocket(p.toString())).orElse(plain);
        return forCaller(layout, config.kv().memory(), caller.hasRole(AuthRole.ENGINE), runtime::poolShares);
    }

    /** The pools only for the engine and only under vram: absent (not empty) otherwise. */
    static KvLayoutResponse forCaller(KvLayoutResponse layout, KvMemory memory, boolean engine,
            Supplier<List<PoolShare>> shares) {
        if (memory != KvMemory.vram || !engine) {
            return layout;
        }
        return layout.withPools(shares.get());
    }
}
