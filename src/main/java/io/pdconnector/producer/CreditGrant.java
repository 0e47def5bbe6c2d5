package io.pdconnector.producer;

import java.util.List;
import java.util.Map;

/**
 * What a grant gives an engine: blocks and lease slots it may bind requests to by itself, until
 * {@code expiresAtMillis} (P's clock; the engine keeps its own, started before it asked), each rank's
 * KV region to write them through, and the fields every committed request's kv_transfer_params share
 * ({@code paramsTemplate}), so that the engine can hand out params without a round trip.
 */
public record CreditGrant(String creditId, int[] blockIds, List<GrantedLease> leases, long expiresInMillis,
        long blockBytes, List<Reservation.RankRegion> ranks, Map<String, Object> paramsTemplate) {

    /** A granted lease slot: every rank's slot already holds the nonce. */
    public record GrantedLease(int slot, long nonce) {
    }

    public CreditGrant {
        blockIds = blockIds.clone();
        leases = List.copyOf(leases);
        ranks = List.copyOf(ranks);
        paramsTemplate = Map.copyOf(paramsTemplate);
    }

    @Override
    public int[] blockIds() {
        return blockIds.clone();
    }
}
