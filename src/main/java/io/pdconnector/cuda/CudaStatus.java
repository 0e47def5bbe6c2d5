package io.pdconnector.cuda;

import java.util.Map;

/**
 * {@code CUresult} names, as cuda.h spells them, for the statuses the calls pd-connector makes can
 * return (and a few neighbours). A status outside the table is named by the driver itself
 * ({@code cuGetErrorName}) when one is loaded, else {@code CUresult <n>}.
 */
final class CudaStatus {

    static final int SUCCESS = 0;

    private static final Map<Integer, String> NAMES = Map.ofEntries(
            Map.entry(0, "CUDA_SUCCESS"),
            Map.entry(1, "CUDA_ERROR_INVALID_VALUE"),
            Map.entry(2, "CUDA_ERROR_OUT_OF_MEMORY"),
            Map.entry(3, "CUDA_ERROR_NOT_INITIALIZED"),
            Map.entry(4, "CUDA_ERROR_DEINITIALIZED"),
            Map.entry(34, "CUDA_ERROR_STUB_LIBRARY"),
            Map.entry(35, "CUDA_ERROR_INSUFFICIENT_DRIVER"),
            Map.entry(36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER"),
            Map.entry(46, "CUDA_ERROR_DEVICE_UNAVAILABLE"),
            Map.entry(100, "CUDA_ERROR_NO_DEVICE"),
            Map.entry(101, "CUDA_ERROR_INVALID_DEVICE"),
            Map.entry(102, "CUDA_ERROR_DEVICE_NOT_LICENSED"),
            Map.entry(201, "CUDA_ERROR_INVALID_CONTEXT"),
            Map.entry(205, "CUDA_ERROR_MAP_FAILED"),
            Map.entry(206, "CUDA_ERROR_UNMAP_FAILED"),
            Map.entry(208, "CUDA_ERROR_ALREADY_MAPPED"),
            Map.entry(214, "CUDA_ERROR_ECC_UNCORRECTABLE"),
            Map.entry(216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE"),
            Map.entry(217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"),
            Map.entry(304, "CUDA_ERROR_OPERATING_SYSTEM"),
            Map.entry(400, "CUDA_ERROR_INVALID_HANDLE"),
            Map.entry(401, "CUDA_ERROR_ILLEGAL_STATE"),
            Map.entry(500, "CUDA_ERROR_NOT_FOUND"),
            Map.entry(600, "CUDA_ERROR_NOT_READY"),
            Map.entry(700, "CUDA_ERROR_ILLEGAL_ADDRESS"),
            Map.entry(708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE"),
            Map.entry(709, "CUDA_ERROR_CONTEXT_IS_DESTROYED"),
            Map.entry(719, "CUDA_ERROR_LAUNCH_FAILED"),
            Map.entry(800, "CUDA_ERROR_NOT_PERMITTED"),
            Map.entry(801, "CUDA_ERROR_NOT_SUPPORTED"),
            Map.entry(802, "CUDA_ERROR_SYSTEM_NOT_READY"),
            Map.entry(803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"),
            Map.entry(804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"),
            Map.entry(999, "CUDA_ERROR_UNKNOWN"));

    private CudaStatus() {
    }

    /** The table's name of {@code status}, or null. */
    static String knownName(int status) {
        return NAMES.get(status);
    }
}
