package io.pdconnector.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.testing.FreePort;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The packaged jar, started as an operator would start it. */
class PackagedServiceIT {

    private static final Path APP = Path.of(System.getProperty("pd.it.app", "target/quarkus-app"));

    @Test
    void startsOnRealNixlAndReportsReady() throws Exception {
        int port = freePort();
        Process service = start(System.getProperty("pd.nixl.home"), port);
        try {
            HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
            HttpResponse<String> ready = null;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (System.nanoTime() < deadline && service.isAlive()) {
                try {
                    ready = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/q/health/ready"))
                            .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
                    if (ready.statusCode() == 200) {
                        break;
                    }
                } catch (IOException notYetListening) {
                    Thread.sleep(200);
                }
            }
            assertTrue(ready != null && ready.statusCode() == 200, "service became ready: " + (ready == null ? "no answer" : ready.body()));
            assertTrue(ready.body().replaceAll("\\s", "").contains("\"kind\":\"nixl\""), ready.body());
        } finally {
            service.destroy();
            service.waitFor(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void refusesToStartWithoutNixlAndSaysWhichPathIsMissing() throws Exception {
        Process service = start("/nonexistent/nixl-home", freePort());

        assertTrue(service.waitFor(60, TimeUnit.SECONDS), "the service exits instead of running without NIXL");
        String output = new String(service.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertNotEquals(0, service.exitValue());
        assertTrue(output.contains("/nonexistent/nixl-home"), output);
    }

    private static Process start(String nixlHome, int port) throws IOException {
        Path jar = APP.resolve("quarkus-run.jar");
        assertTrue(Files.isRegularFile(jar), "packaged jar at " + jar);
        // its KV files under target/, not /dev/shm: another checkout's run on this host must not meet them
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Dpd.nixl.home=" + nixlHome, "-Dquarkus.http.port=" + port,
                "-Dpd.kv.shm-dir=" + APP.toAbsolutePath().getParent().resolve("pd-shm-it"), "-Xmx256m", "-jar",
                jar.toString());
        return new ProcessBuilder(cmd).redirectErrorStream(true).start();
    }

    private static int freePort() throws IOException {
        return FreePort.pick();
    }

    @Test
    void theJarItselfGrantsNativeAccess() throws Exception {
        String manifest;
        try (var jar = new java.util.jar.JarFile(APP.resolve("quarkus-run.jar").toFile())) {
            manifest = jar.getManifest().getMainAttributes().getValue("Enable-Native-Access");
        }
        assertEquals("ALL-UNNAMED", manifest);
    }
}
