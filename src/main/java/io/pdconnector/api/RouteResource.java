package io.pdconnector.api;

import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import io.pdconnector.api.problem.ProblemException;
import io.pdconnector.config.AuthRole;
import io.pdconnector.controlplane.InstanceRecord;
import io.pdconnector.router.Pick;
import io.pdconnector.router.RouterService;
import jakarta.annotation.security.RolesAllowed;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;


/** The router's decision alone, for external routers that send the legs themselves. */
@RolesAllowed(AuthRole.ROUTER)
@Path("/v1/route")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "router")
public class RouteResource {

    private final RouterService router;

    public RouteResource(RouterService router) {
        this.router = router;
    }

    @POST
    @Operation(summary = "A P and a D for one request, picked as the router picks them (role router only)")
    public RouteAnswer route() {
        if (!router.active()) {
            throw ProblemException.roleNotServed("router");
        }
        Pick pick = router.pick();
        return new RouteAnswer(Instance.of(pick.producer()), Instance.of(pick.decoder()));
    }

    /** What {@code POST /v1/route} answers. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record RouteAnswer(Instance producer, Instance decoder) {
    }

    /** One picked instance: who it is and where its HTTP API is. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Instance(String engineId, String host, int port, String address, String epoch) {

        static Instance of(InstanceRecord r) {
            return new Instance(r.engineId(), r.host(), r.port(), r.address(), r.epoch());
        }
    }
}
