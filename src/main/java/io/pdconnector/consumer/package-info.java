/**
 * The decoder side: {@link io.pdconnector.consumer.PullScheduler} is D's step loop, a sibling of
 * the producer's {@code LeaseScheduler} built on the same command queue and step-loop runner.
 * Callers reach it only through {@link io.pdconnector.consumer.ConsumerFacade}, the one builder of
 * {@code ConsumerCommand}s; {@code ConsumerCommandHandler} answers them on the loop thread (a pull's
 * {@code Arrival}, with {@code PeerHandshake}). The step's phases, each a class sharing
 * {@code ConsumerState}, run in the order {@code PullScheduler#doWork} calls them (docs/internals.md
 * names each one's job); {@code Decider} decides for all of them, and {@code KvReadout} hands a
 * decided pull's KV to callers. A pull D's tensor-parallel
 * ranks share (each asks with its decode rank) is joined and released rank by rank in
 * {@code SharedPulls}, one state per rank in {@code DecodeRanks}.
 *
 * <p>A pull goes QUEUED (heartbeating from arrival) → READING (block READs posted without
 * notification, one per source rank) → CHECKING_SLOTS once every READ is terminal (L9) → RECEIVED,
 * or DECLINED / RECOMPUTED by the policy. Where each D-side rule lives:
 * <ul>
 * <li>L5 {@code SlotChecker}: one slot READ per remote rank per step, shared, posted only for pulls
 *     that {@code ReadPoller} moved to CHECKING_SLOTS, so after all their block READs;</li>
 * <li>L6 {@code NotificationOutbox#notifyRead}, called only by {@code Decider#decide} for a clean
 *     pull; block READs are posted without notification ({@code BlockRead#post});</li>
 * <li>L7 {@code Pull#slotVerdict} (mismatch, failed slot READ), {@code LeaseVerification#missingLease}
 *     (no lease fields), counted and handed to the policy in {@code Decider#decide};</li>
 * <li>L9 {@code Pull#pollReads}, which {@code ReadPoller} waits on before a pull can be decided;</li>
 * <li>L10 {@code LeaseVerification}: every D-side step that depends on {@code kv_lease_verification}
 *     asks it.</li>
 * </ul>
 */
package io.pdconnector.consumer;
