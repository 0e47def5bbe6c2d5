package io.pdconnector.transfer;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** The argument check of {@link TransferAgent#allocateShared}, the same for every engine. */
public final class SharedFile {

    /** Linux's PATH_MAX, terminating NUL included. */
    private static final int PATH_MAX = 4096;

    private SharedFile() {
    }

    /** {@code file} if a shared region can be made of it; otherwise says what is wrong. */
    public static Path require(Path file, long bytes) {
        if (file == null || !file.isAbsolute() || file.getFileName() == null) {
            throw new IllegalArgumentException("a shared region needs an absolute file path, got " + file);
        }
        String text = file.toString();
        if (text.indexOf('\0') >= 0 || text.getBytes(StandardCharsets.UTF_8).length >= PATH_MAX) {
            throw new IllegalArgumentException("not a usable file path: " + text);
        }
        if (!Files.isDirectory(file.getParent())) {
            throw new IllegalArgumentException("the directory of shared region file " + file + " does not exist");
        }
        if (bytes <= 0) {
            throw new IllegalArgumentException("shared region " + file + " needs a positive size, got " + bytes);
        }
        return file;
    }
}
