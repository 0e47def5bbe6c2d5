package io.pdconnector.api.openai;

import io.pdconnector.protocol.InvalidKvTransferParamsException;
import io.pdconnector.protocol.KvTransferParams;
import java.util.Map;

/**
 * What the {@code kv_transfer_params} of an OpenAI-style request ask this instance to do, read the
 * way vLLM reads them: {@code do_remote_decode} makes it P for a remote decoder (the other fields of
 * the router's P-leg params are placeholders, often null, and are ignored); {@code do_remote_prefill}
 * makes it D, pulling what P's params describe; neither, or no params at all, is a plain local request.
 */
sealed interface TransferIntent {

    /** No transfer: prefill and decode here. */
    record Local() implements TransferIntent {
    }

    /** P leg: prefill, hold the blocks under a lease, answer the params for D. */
    record PrefillForRemoteDecode() implements TransferIntent {
    }

    /** D leg: pull P's KV (lease-verified), decode from it. */
    record DecodeFromRemotePrefill(KvTransferParams params) implements TransferIntent {
    }

    static TransferIntent of(Object kvTransferParams) {
        if (kvTransferParams == null) {
            return new Local();
        }
        if (!(kvTransferParams instanceof Map<?, ?> raw)) {
            throw new InvalidKvTransferParamsException("kv_transfer_params must be a JSON object, got "
                    + kvTransferParams);
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> params = (Map<String, Object>) raw;
        boolean decode = flag(params, "do_remote_decode");
        boolean prefill = flag(params, "do_remote_prefill");
        if (decode && prefill) {
            throw new InvalidKvTransferParamsException(
                    "do_remote_decode and do_remote_prefill cannot both be true: a request is either P's or D's leg");
        }
        if (decode) {
            return new PrefillForRemoteDecode();
        }
        if (prefill) {
            return new DecodeFromRemotePrefill(KvTransferParams.fromMap(params).validateForPull());
        }
        return new Local();
    }

    private static boolean flag(Map<String, Object> params, String key) {
        Object v = params.get(key);
        if (v != null && !(v instanceof Boolean)) {
            throw new InvalidKvTransferParamsException(key + " must be a boolean, got " + v);
        }
        return Boolean.TRUE.equals(v);
    }
}
