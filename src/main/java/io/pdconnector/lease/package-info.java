/**
 * The producer side of the lease protocol and the step-loop machinery both sides share.
 *
 * <p>{@link io.pdconnector.lease.LeaseScheduler} is P's step loop: one thread owns every lease,
 * block, slot and transfer agent; callers submit commands to a bounded
 * {@link io.pdconnector.lease.CommandQueue} and await the returned future with a deadline
 * ({@link io.pdconnector.lease.Deadlines}). {@link io.pdconnector.lease.StepLoop} runs a
 * {@link io.pdconnector.lease.StepWorker} on its own thread with an idle strategy; tests call
 * {@code open()} and {@code doWork()} themselves instead, which makes them deterministic.
 *
 * <p>Where each rule lives: L1 {@link io.pdconnector.lease.NonceSource}; L2 and L3
 * {@code ProducerRank#applySlotOps} (clears, then writes; finished-sending only after the clear)
 * and the export check in {@code LeaseScheduler}; L4 {@code LeaseScheduler#releaseFinished} with
 * {@link io.pdconnector.lease.SlotPool}; L8 {@link io.pdconnector.lease.Lease#isLive} and the
 * reaper's full sweep; the nonce check of read notifications in {@code DecoderInbox}.
 *
 * <p>Engine integration: an engine's request is an ordinary lease that stays in
 * {@link io.pdconnector.lease.LeaseState#WRITING} between its reservation and its finish, which
 * exports it through the same L2 check as a prefill; abort, expiry and shutdown release it through
 * the same slot-clear path (L3).
 */
package io.pdconnector.lease;
