package io.pdconnector.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** UCX's GPU transport as the environment and NIXL's bundled UCX allow it, before any peer exists. */
class UcxGpuTransportTest {

    @TempDir
    Path modules;

    private Path withCudaModule() throws IOException {
        Files.createFile(modules.resolve("libuct_cuda.so.0.0.0"));
        return modules;
    }

    @Test
    void unsetOrGpuListingUcxTlsPasses() throws IOException {
        Path dir = withCudaModule();
        for (String tls : new String[] {null, "", "all", "cuda_ipc,cuda_copy,tcp", "sm,self,cuda", "^tcp",
                "rc,CUDA_IPC,Cuda_Copy"}) {
            Map<String, String> env = tls == null ? Map.of() : Map.of("UCX_TLS", tls);
            assertEquals(Optional.empty(), UcxGpuTransport.problem(env, dir), "UCX_TLS=" + tls);
        }
    }

    @Test
    void aUcxTlsWithoutCudaIpcIsRefusedNamingIt() throws IOException {
        Path dir = withCudaModule();
        for (String tls : new String[] {"tcp", "sm,self,tcp", "cuda_copy,tcp", "^cuda_ipc", "^cuda,ib"}) {
            Optional<String> p = UcxGpuTransport.problem(Map.of("UCX_TLS", tls), dir);
            assertTrue(p.isPresent() && p.get().startsWith("UCX_TLS=" + tls) && p.get().contains("cuda_ipc"),
                    tls + ": " + p);
        }
    }

    /**
     * NIXL 1.5.1 stops its own start on a UCX_TLS that names cuda_ipc without cuda_copy (or cuda, or all), with a
     * message of its own: pd-connector says so first, in its sentence.
     */
    @Test
    void aUcxTlsWithCudaIpcButWithoutCudaCopyIsRefusedNamingCudaCopy() throws IOException {
        Path dir = withCudaModule();
        for (String tls : new String[] {"cuda_ipc,tcp", "rc,CUDA_IPC", "cuda_ipc", "^cuda_copy", "^tcp,cuda_copy"}) {
            Optional<String> p = UcxGpuTransport.problem(Map.of("UCX_TLS", tls), dir);
            assertTrue(p.isPresent() && p.get().startsWith("UCX_TLS=" + tls) && p.get().contains("cuda_copy"),
                    tls + ": " + p);
        }
    }

    @Test
    void aUcxWithoutItsCudaModuleIsRefused() throws IOException {
        Optional<String> p = UcxGpuTransport.problem(Map.of(), modules);
        assertTrue(p.isPresent() && p.get().contains("no libuct_cuda.so* in " + modules), String.valueOf(p));
        Path other = Files.createDirectory(modules.resolve("other"));
        withCudaModule();
        Optional<String> q = UcxGpuTransport.problem(Map.of("UCX_MODULE_DIR", other.toString()), modules);
        assertTrue(q.isPresent() && q.get().contains("UCX_MODULE_DIR"), "UCX_MODULE_DIR wins: " + q);
    }

    @Test
    void theNixlWheelThisBuildPinsShipsUcxsCudaModule() {
        Path wheelModules = Path.of(System.getProperty("pd.nixl.home"), "nixl_cu12.libs", "ucx");
        assertEquals(Optional.empty(), UcxGpuTransport.problem(Map.of(), wheelModules), wheelModules.toString());
    }
}
