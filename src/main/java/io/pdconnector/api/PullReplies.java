package io.pdconnector.api;

import io.pdconnector.consumer.PullOutcome;
import io.pdconnector.consumer.PulledKv;
import io.pdconnector.error.UnknownRequestException;
import io.pdconnector.reference.ReferenceEngine;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The pull's answer, the same over HTTP and over the engine socket: {@link DecoderPulls} builds it for both. */
final class PullReplies {

    private PullReplies() {
    }

    /**
     * Says where the pulled KV is; reads it in place (checksum, reference check), on the caller's thread, not
     * on D's step loop, only when asked. A pull released meanwhile has none left.
     */
    static PullResponse reply(String requestId, PullOutcome outcome, long enteredAt, boolean checksum,
            boolean checkReference, ReferenceEngine reference) {
        long replyAt = System.nanoTime();
        PulledKv kv = outcome.kv();
        if (!kv.pin()) {
            throw new UnknownRequestException("consumer", requestId);
        }
        String crc = null;
        Boolean matches;
        Map<String, Double> timings = new LinkedHashMap<>();
        timings.put("pull_ms", (replyAt - enteredAt) / 1e6);
        timings.putAll(outcome.timeline().phasesMillis(enteredAt, replyAt));
        try {
            if (checksum) {
                crc = checksumText(kv.crc32c());
                timings.put("checksum_ms", (System.nanoTime() - replyAt) / 1e6);
            }
            matches = checkReference && outcome.localBlockIds().length > 0 ? kv.matches(reference) : null;
        } finally {
            kv.unpin();
        }
        List<ReservationResponse.Rank> ranks = kv.regions().stream().map(r -> new ReservationResponse.Rank(r.rank(),
                r.file().map(Object::toString).orElse(null), r.regionBytes())).toList();
        return new PullResponse(requestId, outcome.state().name().toLowerCase(Locale.ROOT),
                outcome.reason() == null ? null : outcome.reason().wire(),
                Arrays.stream(outcome.localBlockIds()).boxed().toList(), kv.bytes(), kv.rankBlockBytes(), ranks,
                kv.blocksEpoch() == 0 ? null : kv.blocksEpoch(), crc, matches, timings);
    }

    /** One spelling of the KV checksum for the pull reply and the read-out header, so clients can compare them. */
    static String checksumText(long crc32c) {
        return String.format("crc32c:%08x", crc32c);
    }
}
