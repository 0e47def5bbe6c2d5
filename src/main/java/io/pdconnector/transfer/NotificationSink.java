package io.pdconnector.transfer;

import java.util.function.BiConsumer;

/**
 * Where {@link TransferAgent#drainNotifications} hands each notification (sender, bytes), and what
 * it dropped unread: notifications over {@link TransferAgent#MAX_NOTIFICATION_BYTES}, which any peer
 * outside the connector can still send. A lambda is a sink that ignores drops.
 */
@FunctionalInterface
public interface NotificationSink extends BiConsumer<String, byte[]> {

    /** {@code count} (at least 1) notifications were dropped by this drain; called once per drain that dropped any. */
    default void dropped(int count) {
    }
}
