package io.pdconnector.api.engine;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.pdconnector.api.ReservationResponse;
import io.pdconnector.producer.CreditGrant;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * P -> engine: one result per item, in the request's order, and the grant if one was asked for (or, if
 * P refused it, {@code grant_refused}). An item's {@code status} is the HTTP status its own call would
 * have had; a refused item changed nothing. {@code withdrawn}: 204 when the ask's grant was taken back,
 * 404 when P holds none of that ask (and refuses the ask if it comes).
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record EngineBatchResponse(Grant grant, @JsonProperty("grant_refused") ItemResult grantRefused,
        List<ItemResult> commits, List<ItemResult> aborts, List<ItemResult> returns, List<ItemResult> withdrawn) {

    /** What {@link CreditGrant} gives, as JSON; {@code params_template} is every committed request's params but
     * {@code remote_request_id}, {@code remote_block_ids}, {@code remote_num_tokens} and the lease fields. */
    public record Grant(
            @JsonProperty("grant_id") String grantId,
            @JsonProperty("block_ids") List<Integer> blockIds,
            List<Lease> leases,
            @JsonProperty("expires_in_ms") long expiresInMs,
            @JsonProperty("block_bytes") long blockBytes,
            List<ReservationResponse.Rank> ranks,
            @JsonProperty("params_template") Map<String, Object> paramsTemplate) {

        static Grant of(CreditGrant g) {
            return new Grant(g.creditId(), Arrays.stream(g.blockIds()).boxed().toList(),
                    g.leases().stream().map(l -> new Lease(l.slot(), l.nonce())).toList(), g.expiresInMillis(),
                    g.blockBytes(), g.ranks().stream().map(r -> new ReservationResponse.Rank(r.rank(),
                            r.file().map(Object::toString).orElse(null), r.regionBytes())).toList(),
                    g.paramsTemplate());
        }
    }

    public record Lease(int slot, long nonce) {
    }

    /** One item's outcome: 2xx with its params (commits), or the problem's reason and sentence. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record ItemResult(String id, int status, String reason, String detail,
            @JsonProperty("kv_transfer_params") Map<String, Object> kvTransferParams) {
    }
}
