package io.pdconnector.router;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.router.Failure.Leg;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class RetryPolicyTest {

    private static Failure decode(int status, String reason) {
        return new Failure(Leg.DECODE, status, reason, "");
    }

    private static Failure prefill(int status, String reason) {
        return new Failure(Leg.PREFILL, status, reason, "");
    }

    @Test
    void everyDeclineANewPrefillCures_isRetriedUnderItsOwnReason_andBlamesP() {
        for (String reason : List.of("lease_mismatch", "slot_read_failed", "no_lease", "transfer_failed",
                "peer_restarted", "peer_gone", "unknown_peer")) {
            assertEquals(Optional.of(reason), RetryPolicy.retryReason(decode(409, reason)), reason);
            assertTrue(RetryPolicy.blamesProducer(decode(409, reason)), reason);
            assertTrue(RetryPolicy.abortsProducer(decode(409, reason)), reason);
        }
    }

    @Test
    void aDecoderThatReadsThisPsGpuMemoryOnlyOverAHostPathIsRetriedOnAnotherP() {
        Failure refused = decode(422, "vram-host-path");
        assertEquals(Optional.of("vram_host_path"), RetryPolicy.retryReason(refused));
        assertTrue(RetryPolicy.blamesProducer(refused), "another P may be reachable over a GPU transport");
        assertTrue(RetryPolicy.abortsProducer(refused));
    }

    @Test
    void whatWouldFailAgainIsTheAnswer() {
        for (Failure f : List.of(decode(409, "timeout"), decode(409, "aborted"), decode(409, "peer_mismatch"),
                decode(409, null), decode(400, "validation-failed"), decode(422, "incompatible-peer"),
                prefill(400, "invalid-argument"), prefill(409, "wrong-state"), prefill(413, "body-too-large"))) {
            assertEquals(Optional.empty(), RetryPolicy.retryReason(f), f.toString());
        }
    }

    @Test
    void noAnswer_serverErrors_andRoleNotServed_areRetried_blamingTheLegThatFailed() {
        assertEquals(Optional.of("prefill_failed"), RetryPolicy.retryReason(Failure.noAnswer(Leg.PREFILL, "refused")));
        assertEquals(Optional.of("prefill_failed"), RetryPolicy.retryReason(prefill(503, "no-free-blocks")));
        assertEquals(Optional.of("prefill_failed"), RetryPolicy.retryReason(prefill(404, "role-not-served")));
        assertEquals(Optional.of("decode_failed"), RetryPolicy.retryReason(Failure.noAnswer(Leg.DECODE, "reset")));
        assertEquals(Optional.of("decode_failed"), RetryPolicy.retryReason(decode(500, "internal-error")));
        assertTrue(RetryPolicy.blamesProducer(prefill(503, "queue-full")));
        assertFalse(RetryPolicy.blamesProducer(decode(503, "no-free-blocks")), "a busy D is avoided, not P");
    }

    @Test
    void pIsAbortedAfterEveryDFailure_andAfterAPrefillWithoutAnswer_butNotWhenPRefused() {
        assertTrue(RetryPolicy.abortsProducer(decode(400, "validation-failed")));
        assertTrue(RetryPolicy.abortsProducer(Failure.noAnswer(Leg.DECODE, "reset")));
        assertTrue(RetryPolicy.abortsProducer(Failure.noAnswer(Leg.PREFILL, "timeout")), "its reply may be lost");
        assertFalse(RetryPolicy.abortsProducer(prefill(503, "no-free-blocks")));
        assertFalse(RetryPolicy.abortsProducer(prefill(400, "invalid-argument")));
    }

    @Test
    void atMostMaxRetries() {
        RetryPolicy policy = new RetryPolicy(2);
        Failure f = decode(409, "lease_mismatch");
        assertEquals(Optional.of("lease_mismatch"), policy.retry(f, 0));
        assertEquals(Optional.of("lease_mismatch"), policy.retry(f, 1));
        assertEquals(Optional.empty(), policy.retry(f, 2));
        assertEquals(Optional.empty(), new RetryPolicy(0).retry(f, 0));
    }

    @Test
    void retryIds_areDistinctValidAndBounded() {
        assertEquals("r", RequestAttempts.id("r", 0));
        assertEquals("r-retry1", RequestAttempts.id("r", 1));
        String longId = "x".repeat(255) + "\uD83D\uDE00".substring(0, 1);
        String retry = RequestAttempts.id("a".repeat(250) + "\uD83D\uDE00", 2);
        assertTrue(retry.length() <= 256 && retry.endsWith("-retry2"), retry);
        assertFalse(Character.isHighSurrogate(retry.charAt(retry.length() - 8)), "no half of a surrogate pair left");
        assertEquals(256, RequestAttempts.id(longId, 3).length());
    }
}
