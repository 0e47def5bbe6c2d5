package io.pdconnector.config;

/** kv_load_failure_policy: what D does when a pull's KV cannot be used. */
public enum LoadFailurePolicy {
    /** Reply declined (HTTP 409 with the reason); the router decides what next. */
    FAIL,
    /** Recompute the prompt's KV locally and reply recomputed. */
    RECOMPUTE
}
