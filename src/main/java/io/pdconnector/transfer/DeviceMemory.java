package io.pdconnector.transfer;

/**
 * An agent that can register GPU memory as VRAM (NIXL's {@code VRAM_SEG}), beside the DRAM it allocates
 * itself. Only real NIXL agents implement it: {@code agent instanceof DeviceMemory} is how a caller
 * finds out, and one that is not (loopback, fault injection) is refused by the caller, never replaced
 * by DRAM. Same thread rules as {@link TransferAgent}; every region registered here counts in
 * {@link TransferAgent#openHandles()} until {@link #deregisterVram}, its one release path.
 */
public interface DeviceMemory {

    /**
     * Registers {@code [address, address + bytes)} of CUDA device {@code deviceOrdinal} as VRAM. A
     * refusal (NIXL's UCX does not see device memory there) throws the typed {@link TransferException}
     * and leaves nothing registered.
     */
    DeviceRegion registerVram(String label, long address, long bytes, int deviceOrdinal);

    /** Deregisters; the memory stays its owner's to free, and must be freed only after this returned. */
    void deregisterVram(DeviceRegion region);
}
