package io.pdconnector.consumer;

import io.pdconnector.error.StateConflictException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * A pull's KV as it sits in D's local blocks, in one order: block by block and, within a block,
 * rank by rank (each rank's slice in the in-block layout of {@code ReferenceEngine}).
 */
final class KvReadout {

    private final ConsumerState state;

    KvReadout(ConsumerState state) {
        this.state = state;
    }

    /** A copy of a decided pull's KV; a declined pull has no KV to give. */
    byte[] read(Pull pull) {
        if (pull.state() != PullState.RECEIVED && pull.state() != PullState.RECOMPUTED) {
            throw new StateConflictException(pull.requestId(), "request " + pull.requestId() + " is "
                    + pull.state() + "; only received or recomputed KV can be read");
        }
        List<MemorySegment> host = state.ranks.stream().map(r -> r.kv().hostSegment("a KV read-out")).toList();
        int[] local = pull.localBlocks();
        long rankBlock = rankBlockBytes();
        byte[] out = new byte[Math.toIntExact(rankBlock * local.length * state.ranks.size())];
        int at = 0;
        for (int block : local) {
            for (MemorySegment rank : host) {
                MemorySegment.copy(rank, ValueLayout.JAVA_BYTE, block * rankBlock, out, at,
                        (int) rankBlock);
                at += (int) rankBlock;
            }
        }
        return out;
    }

    private long rankBlockBytes() {
        return state.config.geometry().blockBytes(state.config.tpSize());
    }
}
