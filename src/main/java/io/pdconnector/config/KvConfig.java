package io.pdconnector.config;

import io.smallrye.config.WithDefault;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.Pattern;
import java.util.List;
import java.util.Optional;

/** The {@code pd.kv.*} settings of {@link PdConfig}: the KV blocks, their files and where they live. */
public interface KvConfig {
    /** KV blocks of this instance (each rank holds the same block ids). */
    @WithDefault("256") @Min(1) int numBlocks();

    /** vLLM's max_num_seqs; with num-blocks it sizes the lease slots. */
    @WithDefault("64") @Min(1) int maxNumSeqs();

    /**
     * Where P keeps each rank's KV region as a file a local engine can map,
     * {@code pd-<engine-id>-r<rank>.kv}, and D each rank's received KV, {@code pd-<engine-id>-d<rank>.kv}
     * (created if missing; a tmpfs, so the KV stays in memory).
     */
    @WithDefault("/dev/shm")
    @NotBlank
    String shmDir();

    /**
     * Also serve the engine beside this instance on a Unix domain socket, {@code pd-<engine-id>.sock} in
     * {@code shm-dir} beside the KV files (mode 0660): its plugin's per-step batch on P, its pull and release
     * on D, without HTTP's cost per call (docs/engine-integration.md, "The engine socket"). GET /v1/kv-layout
     * names it as {@code engine_socket}. A router has none.
     */
    @WithDefault("true")
    boolean engineSocket();

    /**
     * Where the KV pool lives (docs/gpu.md): {@code dram}, the default, in host memory as it always has;
     * {@code vram} in a pool pd-connector allocates on the engine's GPU ({@code gpu-uuid}), registers with
     * NIXL as VRAM and shares with the engine's plugin over CUDA IPC. Lease slots stay in DRAM either way.
     * With {@code vram} the start-up checks run (libcuda, the GPU, UCX's GPU transport, NIXL's VRAM
     * registration) and any failure stops the start; nothing falls back to DRAM.
     */
    @WithDefault("dram")
    KvMemory memory();

    /**
     * The engine's GPU for {@code memory=vram}, by UUID as {@code nvidia-smi -L} prints it
     * ({@code GPU-8-4-4-4-12 hex}, or {@code MIG-...}): one per TP rank, in rank order, comma-separated;
     * or {@code sole-visible} (TP 1 only): the one GPU this container sees, refused if it sees none or
     * several (a pod whose containers share one GPU claim). Never an ordinal: ordinals are renumbered per
     * container. Unset: no GPU (required with {@code vram}).
     */
    /**
     * What D does when UCX reports that a READ of GPU memory ({@code memory=vram} on either side) takes a host
     * path (TCP, shared host memory, copies through host buffers) instead of {@code cuda_ipc} or GPUDirect RDMA:
     * {@code refuse}, the default, declines that pull and refuses the peer's later pulls with a sentence naming the
     * cause, until the peer restarts; {@code allow} serves them at host speed. Either way the transport each
     * READ took is logged once and exported as {@code pd_kv_read_transport}.
     */
    @WithDefault("refuse")
    VramHostPath vramHostPath();

    Optional<List<@Pattern(regexp = "sole-visible|(GPU|MIG)-[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")
            String>> gpuUuid();
}
