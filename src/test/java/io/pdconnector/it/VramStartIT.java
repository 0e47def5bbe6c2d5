package io.pdconnector.it;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.pdconnector.testing.FreePort;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The packaged jar with {@code pd.kv.memory=vram} on a host without the CUDA driver: the service exits
 * before it serves, with the sentence naming libcuda.so.1 and the setting, and opens no KV region first.
 */
class VramStartIT {

    private static final Path APP = Path.of(System.getProperty("pd.it.app", "target/quarkus-app"));

    @Test
    void vramWithoutLibcudaFailsTheStartWithTheSentence() throws Exception {
        assumeFalse(hostHasLibcuda(), "DID NOT RUN: this host has libcuda.so.1 (the no-driver start is proven only "
                + "where there is none; scripts/gpu-check.sh is the GPU host's check)");
        Path shm = Files.createTempDirectory(APP.toAbsolutePath().getParent(), "pd-shm-vram-it");
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Dpd.nixl.home=" + System.getProperty("pd.nixl.home"), "-Dquarkus.http.port=" + FreePort.pick(),
                "-Dpd.kv.shm-dir=" + shm, "-Dpd.role=producer", "-Dpd.kv.memory=vram",
                "-Dpd.kv.gpu-uuid=GPU-1f2e3d4c-0000-4000-8000-00000000000a", "-Xmx256m", "-jar",
                APP.resolve("quarkus-run.jar").toString());
        Process service = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        assertTrue(service.waitFor(90, TimeUnit.SECONDS), "the service exits instead of serving");
        String output = new String(service.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertNotEquals(0, service.exitValue(), output);
        assertTrue(output.contains("pd.kv.memory=vram needs the CUDA driver library libcuda.so.1, which this host does "
                + "not have"), output);
        assertTrue(output.contains("or set pd.kv.memory=dram"), output);
        assertFalse(output.contains("started as producer"), "no step loop opened: " + output);
        try (var files = Files.list(shm)) {
            assertTrue(files.findAny().isEmpty(), "no KV file was made in " + shm);
        }
        Files.delete(shm);
    }

    private static boolean hostHasLibcuda() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            SymbolLookup.libraryLookup("libcuda.so.1", arena);
            return true;
        } catch (IllegalArgumentException absent) {
            return false;
        }
    }
}
