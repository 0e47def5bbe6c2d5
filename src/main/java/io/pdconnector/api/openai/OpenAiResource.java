package io.pdconnector.api.openai;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.pdconnector.api.PromptInput;
import io.pdconnector.api.RequestBodies;
import io.pdconnector.config.AuthRole;
import io.pdconnector.error.InvalidInputException;
import io.pdconnector.protocol.RequestIds;
import io.quarkus.runtime.annotations.RegisterForReflection;
import jakarta.annotation.security.RolesAllowed;
import jakarta.validation.constraints.NotNull;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.HeaderParam;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.media.Content;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.parameters.RequestBody;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/**
 * The OpenAI-compatible endpoints the P/D routers (vLLM's toy proxy, llm-d's routing sidecar) drive
 * engines through. {@code kv_transfer_params} in the body picks the leg (see {@link TransferIntent});
 * the request id is the router's {@code X-Request-Id}, echoed back, or a fresh one. On a router
 * ({@code pd.role=router}) the same endpoints route the request to a P and a D instead
 * ({@link RoutedAnswers}); the body is kept as its JSON tree so every field the client sent is forwarded.
 */
@Path("/v1")
@Consumes(MediaType.APPLICATION_JSON)
@Produces({MediaType.APPLICATION_JSON, EventStream.MEDIA_TYPE})
@Tag(name = "openai")
@RolesAllowed(AuthRole.ROUTER)
@RegisterForReflection(targets = {CompletionBodies.Completion.class, CompletionBodies.Choice.class,
        CompletionBodies.Chunk.class, ChatBodies.ChatCompletion.class, ChatBodies.Choice.class, ChatBodies.Message.class,
        ChatBodies.Chunk.class, ChatBodies.ChunkChoice.class, ChatBodies.Delta.class, OpenAiUsage.class})
public class OpenAiResource {

    static final String REQUEST_ID_HEADER = "X-Request-Id";

    private final ReferenceGeneration generation;
    private final ObjectMapper json;
    private final RequestBodies bodies;
    private final RoutedAnswers routed;

    public OpenAiResource(ReferenceGeneration generation, ObjectMapper json, RequestBodies bodies, RoutedAnswers routed) {
        this.generation = generation;
        this.json = json;
        this.bodies = bodies;
        this.routed = routed;
    }

    @POST
    @Path("/completions")
    @Operation(summary = "OpenAI completion; kv_transfer_params.do_remote_decode makes it P's leg, "
            + "do_remote_prefill D's (lease-verified pull), neither a local completion")
    @RequestBody(required = true, content = @Content(schema = @Schema(implementation = CompletionRequest.class)))
    public Response completions(@HeaderParam(REQUEST_ID_HEADER) String requestIdHeader, @NotNull ObjectNode body)
            throws JsonProcessingException {
        CompletionRequest request = bodies.read(body, CompletionRequest.class);
        String requestId = requestId(requestIdHeader);
        if (routed.routing()) {
            return routed.answer("/v1/completions", body, requestId);
        }
        Generation g = generation.generate(requestId, CompletionPrompt.tokens(request.prompt()), request);
        ReplyHeader h = new ReplyHeader("cmpl-" + requestId, Instant.now().getEpochSecond(), request.modelName());
        return request.streaming()
                ? stream(requestId, CompletionBodies.chunks(h, g, request.includeUsage()))
                : reply(requestId, CompletionBodies.completion(h, g));
    }

    @POST
    @Path("/chat/completions")
    @Operation(summary = "OpenAI chat completion, with the same legs as /v1/completions")
    @RequestBody(required = true, content = @Content(schema = @Schema(implementation = ChatCompletionRequest.class)))
    public Response chatCompletions(@HeaderParam(REQUEST_ID_HEADER) String requestIdHeader, @NotNull ObjectNode body)
            throws JsonProcessingException {
        ChatCompletionRequest request = bodies.read(body, ChatCompletionRequest.class);
        String requestId = requestId(requestIdHeader);
        if (routed.routing()) {
            return routed.answer("/v1/chat/completions", body, requestId);
        }
        int[] prompt = PromptInput.tokens(ChatTemplate.render(request.messages()), null);
        Generation g = generation.generate(requestId, prompt, request);
        ReplyHeader h = new ReplyHeader("chatcmpl-" + requestId, Instant.now().getEpochSecond(), request.modelName());
        return request.streaming()
                ? stream(requestId, ChatBodies.chunks(h, g, request.includeUsage()))
                : reply(requestId, ChatBodies.completion(h, g));
    }

    /** The router's id names the request on P and D alike (the toy proxy sends the same one to both legs). */
    private static String requestId(String header) {
        if (header == null || header.isBlank()) {
            return UUID.randomUUID().toString();
        }
        if (!RequestIds.isValid(header)) {
            throw InvalidInputException.of(REQUEST_ID_HEADER + " must be 1.." + RequestIds.MAX_LENGTH
                    + " printable characters without ':' or ',' (it travels inside NIXL notifications)");
        }
        return header;
    }

    private static Response reply(String requestId, Object body) {
        return Response.ok(body, MediaType.APPLICATION_JSON_TYPE).header(REQUEST_ID_HEADER, requestId).build();
    }

    private Response stream(String requestId, List<?> chunks) {
        return Response.ok(EventStream.of(json, chunks), EventStream.MEDIA_TYPE)
                .header(REQUEST_ID_HEADER, requestId)
                .header("Cache-Control", "no-cache")
                .build();
    }
}
