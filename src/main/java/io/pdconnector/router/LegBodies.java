package io.pdconnector.router;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The two legs' bodies, built from the client's as vLLM's toy proxy and llm-d's sidecar build them:
 * every field the client sent goes to both legs, so an engine gets what it would get unrouted.
 */
final class LegBodies {

    private LegBodies() {
    }

    /** P leg: one token, no stream, and placeholder params asking for a remote decode. */
    static ObjectNode prefill(ObjectNode client) {
        ObjectNode body = client.deepCopy();
        ObjectNode params = JsonNodeFactory.instance.objectNode();
        params.put("do_remote_decode", true);
        params.put("do_remote_prefill", false);
        params.putNull("remote_engine_id");
        params.putNull("remote_block_ids");
        params.putNull("remote_host");
        params.putNull("remote_port");
        body.set("kv_transfer_params", params);
        body.put("stream", false);
        body.put("max_tokens", 1);
        if (body.has("max_completion_tokens")) {
            body.put("max_completion_tokens", 1);
        }
        body.remove("stream_options");
        return body;
    }

    /** D leg: the client's request as it came, with P's params exactly as P answered them. */
    static ObjectNode decode(ObjectNode client, JsonNode fromProducer) {
        ObjectNode body = client.deepCopy();
        body.set("kv_transfer_params", fromProducer);
        return body;
    }
}
