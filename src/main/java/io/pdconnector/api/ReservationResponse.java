package io.pdconnector.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.producer.Reservation;
import java.util.Arrays;
import java.util.List;

/**
 * P -> engine: where to write a reserved request's KV. {@code kv_file} is null when P keeps its KV
 * in anonymous memory; then {@code PUT .../kv} with {@code upload_bytes} bytes is the only way in.
 * {@code has_lease} false means no lease slot was free (L4): a verifying decoder will decline it.
 */
public record ReservationResponse(
        @JsonProperty("request_id") String requestId,
        @JsonProperty("num_tokens") int numTokens,
        @JsonProperty("block_ids") List<Integer> blockIds,
        @JsonProperty("has_lease") boolean hasLease,
        @JsonProperty("block_bytes") long blockBytes,
        @JsonProperty("upload_bytes") long uploadBytes,
        List<Rank> ranks,
        KvLayout layout) {

    public record Rank(int rank, @JsonProperty("kv_file") String kvFile, @JsonProperty("region_bytes") long regionBytes) {
    }

    static ReservationResponse of(Reservation r, ModelGeometry geometry) {
        List<Rank> ranks = r.ranks().stream()
                .map(x -> new Rank(x.rank(), x.file().map(Object::toString).orElse(null), x.regionBytes())).toList();
        return new ReservationResponse(r.requestId(), r.numTokens(), Arrays.stream(r.blockIds()).boxed().toList(),
                r.hasLease(), r.blockBytes(), r.uploadBytes(), ranks, KvLayout.of(geometry, ranks.size()));
    }
}
