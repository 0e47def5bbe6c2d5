package io.pdconnector.api.openai;

import io.pdconnector.api.DecoderPulls;
import io.pdconnector.api.problem.HostKv;
import io.pdconnector.api.problem.ProblemException;
import io.pdconnector.api.problem.WholeBlocks;
import io.pdconnector.consumer.ConsumerFacade;
import io.pdconnector.error.InvalidInputException;
import io.pdconnector.error.UnavailableException;
import io.pdconnector.producer.ProducerFacade;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.reference.KvDigest;
import io.pdconnector.reference.ReferenceDecoder;
import io.pdconnector.reference.ReferenceEngine;
import io.pdconnector.runtime.ConnectorRuntime;
import jakarta.enterprise.context.ApplicationScoped;

/**
 * The three legs an OpenAI-style request can be, served with the reference engine. Every answer is
 * decoded from a digest of the prompt's KV: on a local request and on P's leg the KV the reference
 * engine computes, on D's leg the bytes D actually pulled. So a router's P/D answer equals the local
 * answer exactly when D used P's KV of the same prompt, and foreign KV shows as a different answer.
 */
@ApplicationScoped
class ReferenceGeneration {

    private final ConnectorRuntime runtime;
    private final DecoderPulls pulls;

    ReferenceGeneration(ConnectorRuntime runtime, DecoderPulls pulls) {
        this.runtime = runtime;
        this.pulls = pulls;
    }

    Generation generate(String requestId, int[] prompt, OpenAiRequest request) {
        int n = request.outputTokens();
        return switch (TransferIntent.of(request.kvTransferParams())) {
            case TransferIntent.Local local -> local(prompt, n);
            case TransferIntent.PrefillForRemoteDecode p -> prefillForRemote(requestId, prompt, n, request.streaming());
            case TransferIntent.DecodeFromRemotePrefill d -> decodeFromRemote(requestId, prompt, n, d.params());
        };
    }

    /**
     * No transfer and no blocks held: the KV is computed to be digested and dropped. The prompt is
     * bounded by the instance's KV blocks, as it would be on a real engine.
     */
    private Generation local(int[] prompt, int n) {
        int blocks = runtime.geometry().blocksFor(prompt.length);
        if (blocks > runtime.config().kv().numBlocks()) {
            throw InvalidInputException.of("the prompt's " + prompt.length + " tokens need " + blocks
                    + " KV blocks, this instance has " + runtime.config().kv().numBlocks());
        }
        return new Generation(ReferenceDecoder.decode(referenceDigest(prompt), n), prompt.length, null);
    }

    /**
     * P's step loop writes the reference KV into the leased blocks; the answer's token is decoded from
     * the same reference KV computed here, because P's blocks are reachable only through the loop.
     */
    private Generation prefillForRemote(String requestId, int[] prompt, int n, boolean streaming) {
        if (streaming) {
            // The routers read kv_transfer_params from one JSON reply and always send stream false here.
            throw InvalidInputException.of("a prefill for a remote decoder (do_remote_decode) answers one JSON "
                    + "object carrying kv_transfer_params: set stream to false");
        }
        ProducerFacade producer = runtime.producer().orElseThrow(() -> ProblemException.roleNotServed("producer"));
        HostKv.require(runtime.config(), "the reference engine's prefill");
        KvTransferParams params = producer.prefill(requestId, prompt);
        return new Generation(ReferenceDecoder.decode(referenceDigest(prompt), n), prompt.length, params.toMap());
    }

    /** D's blocks are released whatever happens once the pull was received or recomputed. */
    private Generation decodeFromRemote(String requestId, int[] prompt, int n, KvTransferParams params) {
        ConsumerFacade consumer = runtime.consumer().orElseThrow(() -> ProblemException.roleNotServed("consumer"));
        HostKv.require(runtime.config(), "the reference engine's decode");
        WholeBlocks.require(runtime.config(), "the reference engine's decode");
        try {
            pulls.pull(requestId, prompt, params);
        } catch (UnavailableException e) {
            if (e.deadlineExceeded()) {
                // The pull may still be decided later; a router has no way to release it through this API.
                abandon(consumer, requestId, e);
            }
            throw e;
        }
        byte[] kv;
        try {
            kv = consumer.readKv(requestId);
        } finally {
            consumer.release(requestId);
        }
        // Nothing read: the decoder's own prefix cache holds the prompt, here the reference engine's KV.
        long digest = params.readsNoBlocks() ? referenceDigest(prompt)
                : KvDigest.ofRankSlices(kv, runtime.geometry(), runtime.config().tpSize());
        return new Generation(ReferenceDecoder.decode(digest, n), prompt.length, null);
    }

    private static void abandon(ConsumerFacade consumer, String requestId, RuntimeException cause) {
        try {
            consumer.abort(requestId);
        } catch (RuntimeException e) {
            cause.addSuppressed(e);
        }
    }

    private long referenceDigest(int[] prompt) {
        return KvDigest.ofReference(new ReferenceEngine(runtime.geometry()), prompt);
    }
}
