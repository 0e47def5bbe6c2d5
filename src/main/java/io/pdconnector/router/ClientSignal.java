package io.pdconnector.router;

import java.util.concurrent.Future;

/**
 * Tells a routed request that its client went away: the upstream call under way is cancelled at
 * once (the HTTP client closes that exchange), so the router can abort P's lease without waiting for
 * a leg it no longer needs.
 */
public final class ClientSignal {

    private volatile boolean gone;
    private volatile Future<?> current;
    private volatile BodyRelay relay;

    /** Called from the HTTP layer's close handler. */
    public void clientGone() {
        gone = true;
        Future<?> f = current;
        if (f != null) {
            f.cancel(true);
        }
        BodyRelay r = relay;
        if (r != null) {
            r.cancel();
        }
    }

    public boolean gone() {
        return gone;
    }

    void track(Future<?> call) {
        current = call;
        if (gone) {
            call.cancel(true);
        }
    }

    void track(BodyRelay body) {
        relay = body;
        if (gone) {
            body.cancel();
        }
    }
}
