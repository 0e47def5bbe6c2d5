package io.pdconnector.api.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.pdconnector.auth.TokenTable;
import io.pdconnector.config.PdConfig;
import io.pdconnector.config.PdConfigs;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The socket's life: served from start to stop, which removes its file and ends every connection. */
class EngineSocketServerTest {

    @TempDir
    Path dir;

    private PdConfig config(String role, boolean on) {
        return PdConfigs.from(Map.of("pd.role", role, "pd.engine-id", "sock-test", "pd.kv.shm-dir", dir.toString(),
                "pd.kv.engine-socket", Boolean.toString(on)));
    }

    private static EngineSocketServer server(PdConfig config) {
        EngineSocketPulls pulls = new EngineSocketPulls(null, null);
        return new EngineSocketServer(config, new EngineSocketCalls(null, null, TokenTable.of(false, Map.of()), null,
                pulls), pulls, new ObjectMapper(), new SimpleMeterRegistry());
    }

    @Test
    void stopRemovesTheSocketAndEndsItsConnections() throws IOException {
        EngineSocketServer server = server(config("consumer", true));
        server.start(null);
        Path socket = server.path().orElseThrow();
        assertEquals(dir.resolve("pd-sock-test.sock"), socket);
        try (EngineSocketClient engine = new EngineSocketClient(socket)) {
            assertEquals(200, engine.call(Map.of("op", "hello")).status());

            server.stop(null);

            assertFalse(Files.exists(socket));
            assertTrue(server.path().isEmpty());
            assertTrue(engine.closedByServer());
        }
    }

    @Test
    void aSocketFileNobodyServesIsTakenOver() throws IOException {
        Path stale = dir.resolve("pd-sock-test.sock");
        try (ServerSocketChannel crashed = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            crashed.bind(UnixDomainSocketAddress.of(stale)); // closing leaves the file, as a killed process does
        }
        assertTrue(Files.exists(stale));
        EngineSocketServer server = server(config("both", true));
        server.start(null);
        try (EngineSocketClient engine = new EngineSocketClient(stale)) {
            assertEquals(200, engine.call(Map.of("op", "hello")).status());
        } finally {
            server.stop(null);
        }
    }

    @Test
    void aSocketAnotherInstanceServesIsNeverTakenOver() throws IOException {
        EngineSocketServer first = server(config("consumer", true));
        first.start(null);
        try {
            UncheckedIOException refused = assertThrows(UncheckedIOException.class,
                    () -> server(config("consumer", true)).start(null));
            assertTrue(refused.getCause().getMessage().contains("another process serves"), refused.getMessage());
            try (EngineSocketClient engine = new EngineSocketClient(first.path().orElseThrow())) {
                assertEquals(200, engine.call(Map.of("op", "hello")).status(), "the first one still serves");
            }
        } finally {
            first.stop(null);
        }
    }

    @Test
    void aFileThatIsNoSocketIsNeitherTakenOverNorRemoved() throws IOException {
        Path file = Files.writeString(dir.resolve("pd-sock-test.sock"), "an operator's file");

        UncheckedIOException refused = assertThrows(UncheckedIOException.class,
                () -> server(config("consumer", true)).start(null));

        assertTrue(refused.getCause().getMessage().contains("is not a socket"), refused.getMessage());
        assertEquals("an operator's file", Files.readString(file));
    }

    @Test
    void everyRoleButTheRouterHasOneUnlessTurnedOff() {
        assertTrue(EngineSocketServer.configuredPath(config("router", true)).isEmpty());
        assertTrue(EngineSocketServer.configuredPath(config("consumer", false)).isEmpty());
        assertTrue(EngineSocketServer.configuredPath(config("producer", true)).isPresent());
        assertTrue(EngineSocketServer.configuredPath(config("both", true)).isPresent());
        EngineSocketServer off = server(config("consumer", false));
        off.start(null);
        assertTrue(off.path().isEmpty());
        off.stop(null);
    }
}
