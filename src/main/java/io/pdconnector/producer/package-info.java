/**
 * The prefill side: {@link io.pdconnector.producer.LeaseScheduler} is P's step loop. Callers use
 * {@code ProducerFacade}, the only builder of {@code ProducerCommand}s; the loop thread answers them
 * in {@code ProducerCommandHandler}. A step runs its phases, each a class with one job, all sharing
 * {@code ProducerState}, in the order {@code LeaseScheduler#doWork} calls them (its javadoc and
 * docs/internals.md name each one's job). Every exit goes through {@code LeaseExit}.
 *
 * <p>Where each of P's lease rules lives:
 * <ul>
 * <li>L1 (nonces non-zero, never repeated, across restarts): {@code NonceSource#next}, its epoch
 *     advanced once per start by {@code LeaseScheduler#open}.</li>
 * <li>L2 (slot written on every rank in the step the request is scheduled, clears before writes):
 *     the write is queued by {@code Admission} and applied by {@code ProducerRank#applySlotOps};
 *     no lease is exported unless every rank's slot holds its nonce:
 *     {@code Exporter#requireSlotWrittenOnEveryRank}.</li>
 * <li>L3 (slot zeroed before finished-sending; blocks freed only when every rank has reported):
 *     {@code LeaseExit#rank} queues the clear, {@code ProducerRank#applySlotOps} zeroes it before
 *     reporting, {@code Lease#rankFinishedSending} refuses a report without a clear, and
 *     {@code Releaser#releaseFinished} waits for {@code Lease#allRanksFinished}.</li>
 * <li>L4 (slot back to the pool only after finished-sending; no free slot, no lease fields):
 *     {@code Releaser} (the only {@code slots.release}); {@code Admission} schedules a slotless
 *     lease and {@code Exporter#export} exports it without lease fields.</li>
 * <li>L8 (heartbeats extend only a live lease; the reaper sweeps every lease):
 *     {@code Lease#extend} and {@code Lease#isLive}, called by {@code NotificationInbox}; the sweep
 *     is {@code Reaper#reap}.</li>
 * <li>The nonce check of read notifications (P's side of L6): {@code NotificationInbox#isCurrent};
 *     each distinct reader counts once: {@code Lease#recordReader}.</li>
 * </ul>
 */
package io.pdconnector.producer;
