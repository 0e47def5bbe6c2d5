package io.pdconnector.router;

import java.io.IOException;
import java.io.OutputStream;
import java.util.List;
import java.util.concurrent.TimeoutException;

/**
 * What the router answers the client: D's reply (or the failed leg's, once retrying is over) with its
 * status and content type, either whole or as a stream still arriving from D, and where the time went.
 */
public final class Routed {

    private final int status;
    private final String contentType;
    private final byte[] body;
    private final BodyRelay stream;
    private final Pick pick;
    private final List<String> retries;
    private final String serverTiming;
    private final Runnable onClientGone;

    Routed(int status, String contentType, byte[] body, BodyRelay stream, Pick pick, List<String> retries,
            String serverTiming, Runnable onClientGone) {
        this.status = status;
        this.contentType = contentType;
        this.body = body;
        this.stream = stream;
        this.pick = pick;
        this.retries = List.copyOf(retries);
        this.serverTiming = serverTiming;
        this.onClientGone = onClientGone;
    }

    public int status() {
        return status;
    }

    public String contentType() {
        return contentType;
    }

    public boolean streaming() {
        return stream != null;
    }

    /** The whole reply; null when {@link #streaming}. */
    public byte[] body() {
        return body;
    }

    /** The P and D of the attempt that answered. */
    public Pick pick() {
        return pick;
    }

    /** The reason of each retry, in order. */
    public List<String> retries() {
        return retries;
    }

    /** The {@code Server-Timing} header value. */
    public String serverTiming() {
        return serverTiming;
    }

    /**
     * Relays the rest of D's stream to the client as it arrives. A client that goes away, or a D
     * that stalls past the leg's deadline, ends it: the upstream read is cancelled and P's lease aborted.
     */
    public void writeTo(OutputStream out) throws IOException {
        try {
            stream.transferTo(out);
        } catch (IOException e) {
            onClientGone.run();
            throw e;
        } catch (TimeoutException e) {
            onClientGone.run();
            throw new IOException(e.getMessage(), e);
        }
    }
}
