package io.pdconnector.protocol;

import io.pdconnector.error.InvalidInputException;

/** kv_transfer_params a caller sent are unusable; maps to a 4xx and changed no state. */
public final class InvalidKvTransferParamsException extends InvalidInputException {

    public InvalidKvTransferParamsException(String message) {
        super("invalid-kv-transfer-params", "invalid kv_transfer_params: " + message);
    }
}
