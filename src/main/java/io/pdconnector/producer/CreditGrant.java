package io.pdconnector.producer;

import io.pdconnector.protocol.KvTransferParams;
import java.util.LinkedHashMap;
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

    /** What one grant command added to {@code credit} ({@code blocks}, {@code placeholders}), as its answer. */
    static CreditGrant of(ProducerState state, Credit credit, int[] blocks, List<Lease> placeholders, long now) {
        List<GrantedLease> leases = placeholders.stream().map(l -> new GrantedLease(l.slot(), l.nonce())).toList();
        var config = state.config;
        Map<String, Object> template = new LinkedHashMap<>();
        template.put("do_remote_prefill", true);
        template.put("do_remote_decode", false);
        template.put("remote_engine_id", config.engineId());
        template.put("remote_host", config.host());
        template.put("remote_port", config.port());
        template.put("tp_size", config.tpSize());
        template.put("transfer_mode", KvTransferParams.PULL);
        return new CreditGrant(credit.id(), blocks, leases, credit.expiresAtMillis() - now,
                state.ranks.getFirst().blockBytes(), state.ranks.stream().map(ProducerRank::region).toList(),
                template);
    }

    @Override
    public int[] blockIds() {
        return blockIds.clone();
    }
}
