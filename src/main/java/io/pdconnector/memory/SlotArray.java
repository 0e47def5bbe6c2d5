package io.pdconnector.memory;

import io.pdconnector.transfer.RegisteredRegion;
import io.pdconnector.transfer.TransferAgent;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * One rank's lease slots: int64s in registered DRAM that remote decoders READ. Stores use release
 * semantics followed by a full fence, so a zeroed slot is visible to a remote READ before the rank
 * goes on to report finished-sending and the blocks can be reused (L3).
 */
public final class SlotArray {

    public static final String LABEL = "lease-slots";
    private static final VarHandle SLOT = ValueLayout.JAVA_LONG.varHandle();

    private final TransferAgent agent;
    private final RegisteredRegion region;
    private final int count;

    private SlotArray(TransferAgent agent, RegisteredRegion region, int count) {
        this.agent = agent;
        this.region = region;
        this.count = count;
    }

    /** Registers {@code count} zeroed slots with {@code agent}; fails with the agent's exception. */
    public static SlotArray register(TransferAgent agent, int count) {
        if (count < 1) {
            throw new IllegalArgumentException("a slot array needs at least one slot, got " + count);
        }
        RegisteredRegion region = agent.allocate(LABEL, (long) count * Long.BYTES);
        region.segment().fill((byte) 0);
        return new SlotArray(agent, region, count);
    }

    public void write(int slot, long nonce) {
        if (nonce == 0) {
            throw new IllegalArgumentException("a slot is written with a non-zero nonce");
        }
        store(slot, nonce);
    }

    public void clear(int slot) {
        store(slot, 0);
    }

    public long read(int slot) {
        return (long) SLOT.getAcquire(region.segment(), offset(slot));
    }

    public int count() {
        return count;
    }

    public long baseAddress() {
        return region.address();
    }

    public int nonZeroSlots() {
        int n = 0;
        for (int i = 0; i < count; i++) {
            n += read(i) != 0 ? 1 : 0;
        }
        return n;
    }

    /** The one release path of the slot region. */
    public void deregister() {
        agent.deregister(region);
    }

    private void store(int slot, long value) {
        SLOT.setRelease(region.segment(), offset(slot), value);
        VarHandle.fullFence();
    }

    private long offset(int slot) {
        if (slot < 0 || slot >= count) {
            throw new IndexOutOfBoundsException("slot " + slot + " is outside [0, " + count + ")");
        }
        return (long) slot * Long.BYTES;
    }
}
