package io.pdconnector.controlplane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class EtcdReachabilityTest {

    private final AtomicLong reconnects = new AtomicLong();
    private final EtcdReachability etcd = new EtcdReachability(List.of("http://127.0.0.1:2379"),
            Duration.ofMillis(500), reconnects);

    @Test
    void aStoreNeverAnsweredIsNotReachedYetAndItsFirstAnswerIsNoReconnection() {
        etcd.failed("connection refused");
        assertFalse(etcd.answering());
        assertTrue(etcd.describe(false, 0, "pd/instances/", "no own record").contains("not reached yet"
                + " (connection refused)"));
        etcd.answered(3);
        assertTrue(etcd.answering());
        assertEquals(0, reconnects.get(), "a first contact is not a reconnection");
        assertEquals("etcd at [http://127.0.0.1:2379] answers; 3 records under pd/instances/; no own record",
                etcd.describe(true, 3, "pd/instances/", "no own record"));
    }

    @Test
    void aStoreLostAfterAnsweringSaysSoAndCountsItsReturn() {
        etcd.answered(1);
        etcd.failed("deadline exceeded");
        assertFalse(etcd.answering());
        String lost = etcd.describe(false, 1, "pd/instances/", "own record of p not written under a live lease");
        assertTrue(lost.startsWith("etcd at [http://127.0.0.1:2379] unreachable for 0 s (deadline exceeded);"), lost);
        assertTrue(lost.contains("keeping the last view of 1 records"), lost);
        etcd.answered(1);
        assertEquals(1, reconnects.get());
    }

    @Test
    void theBackoffDoublesUpToItsMaximumAndStartsOverOnAnAnswer() {
        assertEquals(List.of(100L, 200L, 400L, 500L, 500L), List.of(etcd.nextBackoff().toMillis(),
                etcd.nextBackoff().toMillis(), etcd.nextBackoff().toMillis(), etcd.nextBackoff().toMillis(),
                etcd.nextBackoff().toMillis()));
        etcd.answered(0);
        assertEquals(100, etcd.nextBackoff().toMillis());
    }
}
