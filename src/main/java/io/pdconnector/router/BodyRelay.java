package io.pdconnector.router;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Flow;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * An upstream reply body handed from the HTTP client's threads to the thread answering the client,
 * piece by piece as it arrives, one piece requested at a time (so a slow client slows the upstream
 * read instead of filling memory). Every wait has the leg's deadline; {@link #cancel} stops the
 * upstream read and closes that exchange.
 */
public final class BodyRelay implements Flow.Subscriber<List<ByteBuffer>> {

    private static final Object END = new Object();

    private final BlockingQueue<Object> pieces = new LinkedBlockingQueue<>();
    private final long deadlineNanos;
    private volatile Flow.Subscription subscription;
    private volatile boolean cancelled;

    /** {@code deadlineNanos}: the {@link System#nanoTime} by which the whole body must have arrived. */
    public BodyRelay(long deadlineNanos) {
        this.deadlineNanos = deadlineNanos;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
        subscription = s;
        if (cancelled) {
            s.cancel();
        } else {
            s.request(1);
        }
    }

    @Override
    public void onNext(List<ByteBuffer> item) {
        pieces.add(item);
    }

    @Override
    public void onError(Throwable t) {
        pieces.add(t);
    }

    @Override
    public void onComplete() {
        pieces.add(END);
    }

    /** Writes the body to {@code out} as it arrives, flushing each piece (an SSE event reaches the client at once). */
    public void transferTo(OutputStream out) throws IOException, TimeoutException {
        drain(out, true, Long.MAX_VALUE);
    }

    /** The whole body, at most {@code maxBytes} (a larger one is an IOException). */
    public byte[] readAll(int maxBytes) throws IOException, TimeoutException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        drain(out, false, maxBytes);
        return out.toByteArray();
    }

    private void drain(OutputStream out, boolean flush, long maxBytes) throws IOException, TimeoutException {
        long total = 0;
        try {
            while (true) {
                Object piece = next();
                if (piece == END) {
                    return;
                }
                if (piece instanceof Throwable t) {
                    throw t instanceof IOException io ? io : new IOException(t.getMessage(), t);
                }
                @SuppressWarnings("unchecked")
                List<ByteBuffer> buffers = (List<ByteBuffer>) piece;
                for (ByteBuffer b : buffers) {
                    total += b.remaining();
                    if (total > maxBytes) {
                        throw new IOException("upstream reply larger than " + maxBytes + " bytes");
                    }
                    byte[] bytes = new byte[b.remaining()];
                    b.get(bytes);
                    out.write(bytes);
                }
                if (flush) {
                    out.flush();
                }
                subscription.request(1);
            }
        } catch (IOException | TimeoutException | RuntimeException e) {
            cancel();
            throw e;
        }
    }

    private Object next() throws TimeoutException, IOException {
        long left = deadlineNanos - System.nanoTime();
        try {
            Object piece = left <= 0 ? pieces.poll() : pieces.poll(left, TimeUnit.NANOSECONDS);
            if (piece == null) {
                throw new TimeoutException("the upstream reply did not end before the leg's deadline");
            }
            return piece;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while relaying the upstream reply", e);
        }
    }

    /** Stops reading upstream; the HTTP client then closes that connection. */
    public void cancel() {
        if (!cancelled) {
            pieces.add(new IOException("the relay was cancelled")); // wakes a writer waiting for the next piece
        }
        cancelled = true;
        Flow.Subscription s = subscription;
        if (s != null) {
            s.cancel();
        }
    }
}
