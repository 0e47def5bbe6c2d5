package io.pdconnector.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.FaultsConfig;
import io.pdconnector.config.PdConfigs;
import io.pdconnector.transfer.faults.NotificationFaultPlan;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** {@code pd.faults.*} as the service reads it, to the plans the fault-injecting engine runs. */
class FaultsConfigTest {

    private static FaultsConfig faults(Map<String, String> keys) {
        return PdConfigs.from(keys).faults();
    }

    @Test
    void notificationFaultsAreOffByDefault() {
        assertEquals(Optional.empty(), TransferEngineProducer.notificationPlan(faults(Map.of()).notifications()));
    }

    @Test
    void theNotificationKeysReachThePlan() {
        FaultsConfig f = faults(Map.of("pd.faults.read-kind", "none",
                "pd.faults.notifications.kind", "heartbeat",
                "pd.faults.notifications.actions", "duplicate,late,replay",
                "pd.faults.notifications.delay", "600ms",
                "pd.faults.notifications.every-nth", "2"));
        assertEquals(Optional.empty(), TransferEngineProducer.readPlan(f), "read-kind none: no READ is struck");
        assertEquals(Optional.of(new NotificationFaultPlan(NotificationFaultPlan.Kind.HEARTBEAT,
                List.of(NotificationFaultPlan.Action.DUPLICATE, NotificationFaultPlan.Action.LATE,
                        NotificationFaultPlan.Action.REPLAY), Duration.ofMillis(600), 0, 2)),
                TransferEngineProducer.notificationPlan(f.notifications()));
    }

    @Test
    void anUnknownActionOrKindIsRefusedAtStartUp() {
        assertThrows(RuntimeException.class, () -> faults(Map.of("pd.faults.notifications.actions", "drop")));
        assertThrows(RuntimeException.class, () -> faults(Map.of("pd.faults.notifications.kind", "all")));
    }

    @Test
    void aNotificationKindWithoutAChoiceIsRefusedNamingTheKeys() {
        var e = assertThrows(IllegalArgumentException.class, () -> TransferEngineProducer.notificationPlan(
                faults(Map.of("pd.faults.notifications.kind", "any")).notifications()));
        assertTrue(e.getMessage().contains("pd.faults.notifications.probability")
                && e.getMessage().contains("pd.faults.notifications.every-nth"), e.getMessage());
        var p = assertThrows(IllegalArgumentException.class, () -> TransferEngineProducer.notificationPlan(
                faults(Map.of("pd.faults.notifications.kind", "read", "pd.faults.notifications.probability", "2"))
                        .notifications()));
        assertTrue(p.getMessage().contains("pd.faults.notifications.probability must be in [0, 1]"), p.getMessage());
    }
}
