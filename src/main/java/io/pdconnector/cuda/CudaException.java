package io.pdconnector.cuda;

/**
 * A CUDA driver call that returned an error {@code CUresult}, typed by it. The message names the call
 * with its arguments, the CUDA error name and the raw code, so one log line says which call failed and
 * how ({@code cuMemAlloc_v2(1073741824 bytes) failed: CUDA_ERROR_OUT_OF_MEMORY (2)}).
 */
public sealed class CudaException extends RuntimeException {

    private final String call;
    private final int status;
    private final String errorName;

    CudaException(String call, int status, String errorName) {
        super(call + " failed: " + errorName + " (" + status + ")");
        this.call = call;
        this.status = status;
        this.errorName = errorName;
    }

    public String call() {
        return call;
    }

    /** The raw {@code CUresult}. */
    public int status() {
        return status;
    }

    /** The CUDA name of {@link #status()}, e.g. {@code CUDA_ERROR_OUT_OF_MEMORY}. */
    public String errorName() {
        return errorName;
    }

    static CudaException of(String call, int status, String errorName) {
        return switch (status) {
            case 1 -> new InvalidValue(call, status, errorName);
            case 2 -> new OutOfMemory(call, status, errorName);
            case 3, 4 -> new NotInitialized(call, status, errorName);
            case 34, 35, 36, 803, 804 -> new DriverMismatch(call, status, errorName);
            case 46, 100, 101, 102 -> new NoDevice(call, status, errorName);
            case 201, 709 -> new InvalidContext(call, status, errorName);
            case 205, 206, 208, 216, 217 -> new MappingFailed(call, status, errorName);
            case 400 -> new InvalidHandle(call, status, errorName);
            case 800, 801 -> new NotSupported(call, status, errorName);
            default -> new DriverFailure(call, status, errorName);
        };
    }

    /** An argument the driver refused (pd-connector checks its own first, so this one got past them). */
    public static final class InvalidValue extends CudaException {
        InvalidValue(String call, int status, String name) { super(call, status, name); }
    }

    /** The GPU has not that much free memory (the pool, or the probe, does not fit). */
    public static final class OutOfMemory extends CudaException {
        OutOfMemory(String call, int status, String name) { super(call, status, name); }
    }

    /** cuInit was not called, or the driver is shutting down. */
    public static final class NotInitialized extends CudaException {
        NotInitialized(String call, int status, String name) { super(call, status, name); }
    }

    /** A stub libcuda, or a driver older than the CUDA version the call needs. */
    public static final class DriverMismatch extends CudaException {
        DriverMismatch(String call, int status, String name) { super(call, status, name); }
    }

    /** No usable GPU: none visible, a bad ordinal, or a device that is unavailable (exclusive mode, lost). */
    public static final class NoDevice extends CudaException {
        NoDevice(String call, int status, String name) { super(call, status, name); }
    }

    /** No current context, or a destroyed one. */
    public static final class InvalidContext extends CudaException {
        InvalidContext(String call, int status, String name) { super(call, status, name); }
    }

    /** An IPC mapping that cannot be made (already mapped in that process, peer access unsupported). */
    public static final class MappingFailed extends CudaException {
        MappingFailed(String call, int status, String name) { super(call, status, name); }
    }

    public static final class InvalidHandle extends CudaException {
        InvalidHandle(String call, int status, String name) { super(call, status, name); }
    }

    /** The operation is not allowed or supported here (e.g. legacy CUDA IPC of VMM memory). */
    public static final class NotSupported extends CudaException {
        NotSupported(String call, int status, String name) { super(call, status, name); }
    }

    /** Any other error status, including CUDA_ERROR_UNKNOWN and codes newer than this table. */
    public static final class DriverFailure extends CudaException {
        DriverFailure(String call, int status, String name) { super(call, status, name); }
    }
}
