package io.pdconnector.producer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.protocol.Nonces;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NonceSourceTest {

    @TempDir
    Path dir;

    @Test
    void L1_noncesAreNonZeroBelow2e53AndNeverRepeatAcrossRestarts() {
        Set<Long> seen = new HashSet<>();
        for (int restart = 0; restart < 20; restart++) {
            NonceSource nonces = new NonceSource(dir);
            for (int i = 0; i < 500; i++) {
                long n = nonces.next();
                assertTrue(n > 0 && n < Nonces.LIMIT, "nonce " + n + " out of (0, 2^53)");
                assertTrue(seen.add(n), "nonce " + n + " repeated after restart " + restart);
            }
        }
    }

    @Test
    void L1_exhaustedCounterMovesToANewPersistedEpoch() throws Exception {
        NonceSource nonces = new NonceSource(dir, 2);
        Set<Long> seen = new HashSet<>();
        for (int i = 0; i < 12; i++) {
            assertTrue(seen.add(nonces.next()));
        }
        long epoch = nonces.epoch();
        assertTrue(epoch > 1, "the counter ran out and advanced the epoch");
        assertEquals(Long.toString(epoch), Files.readString(dir.resolve("nonce-epoch")));
        NonceSource restarted = new NonceSource(dir, 2);
        assertTrue(seen.add(restarted.next()), "a restart continues past the last persisted epoch");
    }

    @Test
    void L1_corruptEpochFileRefusesToStart() throws Exception {
        Files.writeString(dir.resolve("nonce-epoch"), "not a number");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> new NonceSource(dir));
        assertTrue(e.getMessage().contains("corrupt"), e.getMessage());
    }

    @Test
    void L1_exhaustedEpochsRefuseRatherThanRepeat() throws Exception {
        Files.writeString(dir.resolve("nonce-epoch"), Long.toString((1L << 21) - 1));
        assertThrows(IllegalStateException.class, () -> new NonceSource(dir));
    }
}
