package io.pdconnector.bench.load;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class LoadOptionsTest {

    @Test
    void defaults_startAFleetAndRunThreeRowsOf32Tokens() {
        LoadOptions o = LoadOptions.defaults();

        assertTrue(o.startsFleet());
        assertNull(o.producer());
        assertEquals(500, o.requests());
        assertEquals(Duration.ofSeconds(60), o.maxSeconds());
        assertEquals(List.of(1, 16, 64), o.concurrency());
        assertEquals(List.of(new TokenDistribution(32, 32)), o.tokens());
        assertEquals(LoadOptions.Api.NATIVE, o.api());
        assertEquals(LoadOptions.Release.DELETE, o.release());
        assertFalse(o.prefillAhead());
        assertFalse(o.compareVerification());
        assertEquals(1, o.rounds(), "rounds only apply to --compare");
        assertFalse(o.rawRead());
        assertEquals(2000, o.rawReads());
        assertTrue(o.verification());
        assertEquals(Path.of("target", "load"), o.out());
    }

    @Test
    void everyOption_isParsed_inBothSpellings() {
        LoadOptions o = LoadOptions.parse(new String[] {"--producer", "http://127.0.0.1:8100",
                "--consumer=http://localhost:8200/", "--requests", "1_000", "--max-seconds=30", "--concurrency", "2,8",
                "--tokens", "32,16:512", "--api", "openai", "--release", "kv", "--prefill", "ahead", "--max-tokens", "4", "--raw-read",
                "--raw-reads", "300", "--verification", "off", "--warmup", "0", "--trivial-requests", "50",
                "--http-timeout", "5", "--out", "/tmp/x", "--plot", "svg", "--progress", "plain", "--seed", "7"});

        assertEquals(URI.create("http://127.0.0.1:8100"), o.producer());
        assertEquals(URI.create("http://localhost:8200"), o.consumer());
        assertFalse(o.startsFleet());
        assertEquals(1000, o.requests());
        assertEquals(Duration.ofSeconds(30), o.maxSeconds());
        assertEquals(List.of(2, 8), o.concurrency());
        assertEquals(List.of(new TokenDistribution(32, 32), new TokenDistribution(16, 512)), o.tokens());
        assertEquals(LoadOptions.Api.OPENAI, o.api());
        assertEquals(LoadOptions.Release.KV, o.release());
        assertTrue(o.prefillAhead());
        assertEquals(4, o.maxTokens());
        assertTrue(o.rawRead());
        assertEquals(300, o.rawReads());
        assertFalse(o.verification());
        assertEquals(0, o.warmup());
        assertEquals(50, o.trivialRequests());
        assertEquals(Duration.ofSeconds(5), o.httpTimeout());
        assertEquals(Path.of("/tmp/x"), o.out());
        assertEquals(LoadOptions.PlotFormat.SVG, o.plot());
        assertEquals(LoadOptions.ProgressMode.PLAIN, o.progress());
        assertEquals(7, o.seed());
        assertEquals(8, o.maxConcurrency());
        assertEquals(32, o.maxBlocks(16), "512 tokens are 32 blocks of 16");
    }

    @Test
    void compareVerification_keepsItsRounds_andNeedsItsOwnFleet() {
        LoadOptions o = LoadOptions.parse(new String[] {"--compare", "verification", "--rounds", "6"});
        assertTrue(o.compareVerification());
        assertEquals(6, o.rounds());

        assertThrows(IllegalArgumentException.class, () -> LoadOptions.parse(new String[] {"--compare", "verification",
                "--producer", "http://127.0.0.1:1", "--consumer", "http://127.0.0.1:2"}));
        assertThrows(IllegalArgumentException.class, () -> LoadOptions.parse(new String[] {"--compare", "speed"}));
        assertThrows(IllegalArgumentException.class, () -> LoadOptions.parse(new String[] {"--compare", "verification",
                "--requests", "3", "--rounds", "4"}), "more rounds than requests");
    }

    @Test
    void addressesOutsideLoopback_orWithPaths_areRefused() {
        for (String url : new String[] {"http://10.0.0.1:8080", "http://192.168.1.2:80", "https://127.0.0.1:8080",
                "http://127.0.0.1", "http://127.0.0.1:8080/v1", "ftp://127.0.0.1:21", "http://[::1]:8080"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> LoadOptions.parse(new String[] {"--producer", url, "--consumer", "http://127.0.0.1:2"}), url);
            assertTrue(e.getMessage().startsWith("--producer"), e.getMessage());
        }
        assertEquals(URI.create("http://127.1.2.3:9"), LoadOptions.loopback("--x", "http://127.1.2.3:9"));
    }

    @Test
    void badValues_nameTheOption() {
        assertMessage("--producer and --consumer go together", "--producer", "http://127.0.0.1:1");
        assertMessage("--requests must be in [1, 10000000], got 0", "--requests", "0");
        assertMessage("--concurrency must be in [1, 1024], got 2000", "--concurrency", "1,2000");
        assertMessage("--concurrency takes a number, got 'x'", "--concurrency", "1,x");
        assertMessage("--api takes one of [native, openai], got 'grpc'", "--api", "grpc");
        assertMessage("unknown option --bogus", "--bogus", "1");
        assertMessage("--requests needs a value", "--requests");
        assertMessage("--tokens takes N or MIN:MAX, got 'a:b'", "--tokens", "a:b");
        assertMessage("token counts must satisfy 1 <= min <= max <= 262144, got 512:32", "--tokens", "512:32");
    }

    private static void assertMessage(String expected, String... args) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> LoadOptions.parse(args));
        assertTrue(e.getMessage().startsWith(expected), "'" + e.getMessage() + "' should start with '" + expected + "'");
    }
}
