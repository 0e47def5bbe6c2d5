package io.pdconnector.consumer;

import io.pdconnector.error.StateConflictException;
import io.pdconnector.error.UnknownRequestException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.zip.CRC32C;

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
        int[] local = pull.localBlocks();
        long rankBlock = rankBlockBytes();
        byte[] out = new byte[Math.toIntExact(rankBlock * local.length * state.ranks.size())];
        int at = 0;
        for (int block : local) {
            for (ConsumerRank rank : state.ranks) {
                MemorySegment.copy(rank.kv().segment(), ValueLayout.JAVA_BYTE, block * rankBlock, out, at,
                        (int) rankBlock);
                at += (int) rankBlock;
            }
        }
        return out;
    }

    /** CRC-32C over the same bytes, in the same order, as {@link #read}, without copying them. */
    long checksum(Pull pull) {
        if (pull.localBlocks() == null) {
            throw new UnknownRequestException("consumer", pull.requestId());
        }
        long rankBlock = rankBlockBytes();
        CRC32C crc = new CRC32C();
        for (int block : pull.localBlocks()) {
            for (ConsumerRank rank : state.ranks) {
                crc.update(rank.kv().segment().asSlice(block * rankBlock, rankBlock).asByteBuffer());
            }
        }
        return crc.getValue();
    }

    /** Whether {@code pull} (null: not held) has local blocks holding exactly the reference KV of its prompt. */
    boolean matchesReference(Pull pull) {
        if (pull == null || pull.localBlocks() == null) {
            return false;
        }
        return state.ranks.stream().allMatch(r -> r.matches(state.reference, pull.localBlocks(), pull.tokens(),
                state.config.tpSize()));
    }

    private long rankBlockBytes() {
        return state.config.geometry().blockBytes(state.config.tpSize());
    }
}
