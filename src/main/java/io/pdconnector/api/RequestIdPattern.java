package io.pdconnector.api;

/** Request ids travel inside notifications ({@code <id>:<consumers>:<nonce>}), so no ':' or ','. */
final class RequestIdPattern {

    /** The same rule as {@link io.pdconnector.protocol.RequestIds}: 1-256 printable characters, no ':' or ','. */
    static final String REGEX = "[^:,\\p{Cntrl}]{1,256}";

    private RequestIdPattern() {
    }
}
