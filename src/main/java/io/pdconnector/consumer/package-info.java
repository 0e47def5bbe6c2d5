/**
 * The decoder side: {@link io.pdconnector.consumer.PullScheduler} is D's step loop, a sibling of
 * the producer's {@code LeaseScheduler} built on the same command queue and step-loop runner.
 *
 * <p>A pull goes QUEUED (heartbeating from arrival) → READING (block READs posted without
 * notification, one per source rank) → CHECKING_SLOTS once every READ is terminal (L9) → RECEIVED,
 * or DECLINED / RECOMPUTED by the policy. Where each rule lives: L5 {@code SlotChecker} (one slot
 * READ per remote rank per step, shared, after the block READs); L6 {@code NotificationOutbox#notifyRead},
 * called only by {@code PullScheduler#decide} on a clean pull; L7 {@code Pull#slotVerdict} and
 * {@code PullScheduler#applyPolicy}; L10 the {@code leaseVerification} switch in the scheduler.
 */
package io.pdconnector.consumer;
