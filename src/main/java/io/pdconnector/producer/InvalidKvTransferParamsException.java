package io.pdconnector.producer;

/** kv_transfer_params a caller sent are unusable; maps to a 4xx and changed no state. */
public final class InvalidKvTransferParamsException extends IllegalArgumentException {

    public InvalidKvTransferParamsException(String message) {
        super("invalid kv_transfer_params: " + message);
    }
}
