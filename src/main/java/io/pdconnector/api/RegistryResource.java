package io.pdconnector.api;

import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import io.pdconnector.config.AuthRole;
import io.pdconnector.controlplane.InstanceRecord;
import io.pdconnector.controlplane.Registry;
import io.pdconnector.controlplane.RegistryStore;
import io.pdconnector.runtime.ConnectorRuntime;
import jakarta.annotation.security.RolesAllowed;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/** The fleet as this instance sees it, and this instance's own record (what the static store fetches). */
@Path("/v1/registry")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "control plane")
public class RegistryResource {

    private final Registry registry;

    public RegistryResource(ConnectorRuntime runtime) {
        this.registry = runtime.registry();
    }

    @GET
    @RolesAllowed({AuthRole.OPERATOR, AuthRole.PEER})
    @Operation(summary = "Every instance this one knows: engine id, role, address, epoch, capacity, readiness")
    public RegistryView fleet() {
        long now = System.currentTimeMillis();
        RegistryStore.StoreHealth health = registry.health();
        Map<String, Long> refused = new TreeMap<>();
        registry.refusals().forEach((reason, n) -> refused.put(reason, n.get()));
        return new RegistryView(registry.self().engineId(), registry.storeKind(), health,
                registry.instances().stream().map(r -> InstanceView.of(r, now)).toList(), refused);
    }

    @GET
    @Path("/self")
    @RolesAllowed({AuthRole.PEER, AuthRole.OPERATOR})
    @Operation(summary = "This instance's own registry record, NIXL metadata included")
    public InstanceRecord self() {
        return registry.self();
    }

    /** What {@code GET /v1/registry} answers. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record RegistryView(String self, String store, RegistryStore.StoreHealth health,
            List<InstanceView> instances, Map<String, Long> refused) {
    }

    /** One instance, without its metadata blobs: what an operator reads. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record InstanceView(String engineId, String role, String address, String epoch, int tpSize,
            boolean producer, int connectorVersion, String compatHash, InstanceRecord.Capacity capacity, boolean ready,
            long ageMillis) {

        static InstanceView of(InstanceRecord r, long now) {
            return new InstanceView(r.engineId(), r.role(), r.address(), r.epoch(), r.tpSize(), r.producer(),
                    r.connectorVersion(), r.compatHash(), r.capacity(), r.ready(), Math.max(0, now - r.publishedAtMillis()));
        }
    }
}
