package io.pdconnector.loop;

import io.pdconnector.error.UnavailableException;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Awaiting a step loop's answer, always with a deadline; the loop's own exception is rethrown as is. */
public final class Deadlines {

    private Deadlines() {
    }

    public static <T> T await(CompletableFuture<T> future, Duration deadline, String what) {
        try {
            return future.get(deadline.toNanos(), TimeUnit.NANOSECONDS);
        } catch (ExecutionException | CompletionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw new IllegalStateException(what + " failed", e.getCause());
        } catch (TimeoutException e) {
            throw noAnswer(what, deadline);
        } catch (CancellationException e) {
            throw new IllegalStateException(what + " was cancelled", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for " + what, e);
        }
    }

    /** The 503 of a wait for {@code what} that ran out; also for callers that wait in their own way. */
    public static UnavailableException noAnswer(String what, Duration deadline) {
        return UnavailableException.deadlineExceeded(what + " got no answer within " + deadline);
    }
}
