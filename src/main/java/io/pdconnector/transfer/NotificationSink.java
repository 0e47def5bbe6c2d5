package io.pdconnector.transfer;

import java.util.function.BiConsumer;

/**
 * A sink for {@link TransferAgent#drainNotifications} that also hears what the drain dropped unread:
 * notifications over {@link TransferAgent#MAX_NOTIFICATION_BYTES}, which any peer outside the
 * connector can still send. A plain {@link BiConsumer} given instead gets the same notifications
 * and no word of the drops.
 */
@FunctionalInterface
public interface NotificationSink extends BiConsumer<String, byte[]> {

    /** {@code count} (at least 1) notifications were dropped by this drain; called once per drain that dropped any. */
    default void dropped(int count) {
    }

    /** Tells {@code sink} of {@code count} drops if it is a {@link NotificationSink} and there were any. */
    static void reportDropped(BiConsumer<String, byte[]> sink, int count) {
        if (count > 0 && sink instanceof NotificationSink s) {
            s.dropped(count);
        }
    }
}
