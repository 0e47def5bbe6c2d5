package io.pdconnector.cuda;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Whether UCX, as this process will start it, can move VRAM over a GPU transport ({@code cuda_ipc} on one
 * node; the CUDA module that also lets it recognise device memory). Without one, NIXL's UCX either
 * refuses the VRAM registration or moves the KV over a host path (TCP, copies staged through host
 * memory) at a fraction of the GPU's speed, and nothing says so: pd-connector refuses to start instead.
 * What is checked is what can be known before a peer exists: {@code UCX_TLS} and the CUDA transport
 * module of the UCX NIXL loads. Which transport a READ finally takes is UCX's choice per peer; that part
 * is for the GPU check (docs/gpu.md).
 */
public final class UcxGpuTransport {

    /** UCX_TLS names under which UCX's same-node GPU transport is allowed. */
    private static final List<String> GPU_TLS = List.of("all", "cuda", "cuda_ipc");
    /**
     * UCX_TLS names under which UCX's CUDA copy transport is allowed: NIXL 1.5.1 refuses a UCX_TLS naming
     * cuda_ipc without one of them, stopping the start with its own message.
     */
    private static final List<String> COPY_TLS = List.of("all", "cuda", "cuda_copy");

    private UcxGpuTransport() {
    }

    /**
     * Empty if UCX may use its GPU transports; else the reason it cannot, as a sentence. {@code env} is the
     * process environment; {@code bundledModules} the folder of the UCX modules NIXL's wheel ships (used
     * unless {@code UCX_MODULE_DIR} names another).
     */
    public static Optional<String> problem(Map<String, String> env, Path bundledModules) {
        String tls = env.get("UCX_TLS");
        if (tls != null && !tls.isBlank()) {
            List<String> names = Arrays.stream(tls.split(",")).map(s -> s.trim().toLowerCase(Locale.ROOT))
                    .filter(s -> !s.isEmpty()).toList();
            boolean exclusion = names.getFirst().startsWith("^");
            List<String> listed = names.stream().map(s -> s.startsWith("^") ? s.substring(1) : s).toList();
            if (exclusion && listed.stream().anyMatch(n -> n.equals("cuda") || n.equals("cuda_ipc"))) {
                return Optional.of("UCX_TLS=" + tls + " excludes cuda_ipc, UCX's GPU transport");
            }
            if (exclusion && listed.contains("cuda_copy")) {
                return Optional.of("UCX_TLS=" + tls + " excludes cuda_copy, which NIXL needs beside cuda_ipc");
            }
            if (!exclusion && listed.stream().noneMatch(GPU_TLS::contains)) {
                return Optional.of("UCX_TLS=" + tls + " does not allow cuda_ipc, UCX's GPU transport (list cuda_ipc, "
                        + "cuda or all, or unset UCX_TLS)");
            }
            if (!exclusion && listed.stream().noneMatch(COPY_TLS::contains)) {
                return Optional.of("UCX_TLS=" + tls + " names cuda_ipc without cuda_copy, which NIXL refuses (add "
                        + "cuda_copy, or list cuda or all)");
            }
        }
        String override = env.get("UCX_MODULE_DIR");
        Path modules = override != null && !override.isBlank() ? Path.of(override) : bundledModules;
        if (!hasCudaModule(modules)) {
            return Optional.of("the UCX that NIXL loads has no CUDA transport module (no libuct_cuda.so* in " + modules
                    + (override != null && !override.isBlank() ? ", UCX_MODULE_DIR" : "") + ")");
        }
        return Optional.empty();
    }

    private static boolean hasCudaModule(Path dir) {
        if (!Files.isDirectory(dir)) {
            return false;
        }
        try (Stream<Path> files = Files.list(dir)) {
            return files.anyMatch(f -> f.getFileName().toString().startsWith("libuct_cuda.so"));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list UCX modules in " + dir, e);
        }
    }
}
