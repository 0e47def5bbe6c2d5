package io.pdconnector.error;

/**
 * The caller went away (its HTTP connection closed) before its answer: an expected outcome, not a
 * failure of the service. What it holds was given up already (D aborted the pull, the router P's
 * lease); the answer, 499 client-gone, reaches nobody and is logged at DEBUG only.
 */
public final class ClientGoneException extends PdException {

    public ClientGoneException(String requestId, String message) {
        super("client-gone", message, requestId, null);
    }
}
