package io.pdconnector.config;

/** {@link KvConfig#memory()}: host memory (today's KV regions) or a GPU pool shared over CUDA IPC. */
public enum KvMemory {
    dram,
    vram
}
