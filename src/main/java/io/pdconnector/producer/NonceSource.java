package io.pdconnector.producer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Lease nonces (L1): non-zero, below 2^53 so JSON parsers keep them exact, and never repeated by an
 * instance. The high bits are an epoch persisted in the state dir and advanced on every start (and
 * whenever the counter runs out), so a restarted instance cannot hand out a nonce it gave before.
 * Used by the step loop only.
 */
public final class NonceSource {

    static final int DEFAULT_COUNTER_BITS = 32;
    private static final String FILE = "nonce-epoch";

    private final Path file;
    private final int counterBits;
    private long epoch;
    private long counter;

    public NonceSource(Path stateDir) {
        this(stateDir, DEFAULT_COUNTER_BITS);
    }

    NonceSource(Path stateDir, int counterBits) {
        if (counterBits < 1 || counterBits > 52) {
            throw new IllegalArgumentException("counterBits must be in [1, 52], got " + counterBits);
        }
        this.file = stateDir.resolve(FILE);
        this.counterBits = counterBits;
        this.epoch = readEpoch();
        advanceEpoch();
    }

    public long next() {
        if (++counter >= 1L << counterBits) {
            advanceEpoch();
            counter = 1;
        }
        return epoch << counterBits | counter;
    }

    public long epoch() {
        return epoch;
    }

    private void advanceEpoch() {
        if (epoch + 1 >= 1L << (53 - counterBits)) {
            throw new IllegalStateException("nonce epochs in " + file + " are exhausted (" + epoch
                    + "); nonces would repeat or exceed 2^53");
        }
        epoch++;
        counter = 0;
        persist(epoch);
    }

    private long readEpoch() {
        if (!Files.exists(file)) {
            return 0;
        }
        try {
            String text = Files.readString(file, StandardCharsets.US_ASCII).trim();
            long value = Long.parseLong(text);
            if (value < 0) {
                throw new NumberFormatException("negative");
            }
            return value;
        } catch (NumberFormatException e) {
            throw new IllegalStateException("nonce epoch file " + file + " is corrupt; refusing to start,"
                    + " since guessing could repeat nonces", e);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read nonce epoch file " + file, e);
        }
    }

    /** Written to a temporary file, synced, then renamed: a crash leaves the old or the new epoch. */
    private void persist(long value) {
        try {
            Files.createDirectories(file.getParent());
            Path tmp = file.resolveSibling(FILE + ".tmp");
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING)) {
                ch.write(StandardCharsets.US_ASCII.encode(Long.toString(value)));
                ch.force(true);
            }
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot persist nonce epoch to " + file, e);
        }
    }
}
