package io.pdconnector.api.openai;

import io.pdconnector.config.AuthRole;
import jakarta.annotation.security.RolesAllowed;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.pdconnector.router.Routed;
import io.pdconnector.router.RouterService;
import io.quarkus.runtime.annotations.RegisterForReflection;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.util.List;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/**
 * OpenAI's model list, which clients read before they send anything. An engine lists the reference
 * engine's model (it answers under whatever model name a request gives); a router relays a decoder's list.
 */
@RolesAllowed(AuthRole.ROUTER)
@Path("/v1/models")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "openai")
@RegisterForReflection(targets = {ModelsResource.ModelList.class, ModelsResource.Model.class})
public class ModelsResource {

    private final RouterService router;

    public ModelsResource(RouterService router) {
        this.router = router;
    }

    @GET
    @Operation(summary = "The models served (OpenAI list); a router relays a decoder's")
    public Response models() {
        if (router.active()) {
            Routed r = router.models();
            return Response.status(r.status()).type(r.contentType()).entity(r.body()).build();
        }
        return Response.ok(new ModelList("list", List.of(new Model(OpenAiRequest.DEFAULT_MODEL, "model", 0,
                "pd-connector"))), MediaType.APPLICATION_JSON_TYPE).build();
    }

    public record ModelList(String object, List<Model> data) {
    }

    public record Model(String id, String object, long created, @JsonProperty("owned_by") String ownedBy) {
    }
}
