package io.pdconnector.transfer;

/** What a descriptor list describes: host memory, or GPU memory registered as VRAM (pd.kv.memory=vram). */
public enum MemoryType {
    DRAM,
    VRAM
}
