package io.pdconnector.cuda;

/** The configured GPU is not among those this process sees (or, for sole-visible, not exactly one is). */
public final class GpuNotFoundException extends RuntimeException {

    public GpuNotFoundException(String message) {
        super(message);
    }
}
