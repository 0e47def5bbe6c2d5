package io.pdconnector.cuda;

/**
 * The CUDA driver cannot be used here at all: libcuda.so.1 is missing, or lacks a symbol pd-connector
 * binds. The message names the library and the setting that asked for it ({@code pd.kv.memory=vram}).
 */
public final class CudaUnavailableException extends RuntimeException {

    public CudaUnavailableException(String message) {
        super(message);
    }

    public CudaUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
