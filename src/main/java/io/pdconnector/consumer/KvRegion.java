package io.pdconnector.consumer;

import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;

/**
 * Where one decode rank keeps its received KV: its file ({@code pd-<engine>-d<rank>.kv} in
 * {@code pd.kv.shm-dir}, which a local engine maps to read a pull's blocks in place; empty for anonymous
 * memory) and the region's size. Block {@code b} of the rank starts at byte {@code b * block_bytes}.
 */
public record KvRegion(int rank, Optional<Path> file, long regionBytes) {

    public KvRegion {
        Objects.requireNonNull(file, "file");
    }
}
