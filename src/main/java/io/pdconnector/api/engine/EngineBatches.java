package io.pdconnector.api.engine;

import io.pdconnector.api.problem.Problem;
import io.pdconnector.api.problem.ProblemMappers;
import io.pdconnector.error.PdException;
import io.pdconnector.loop.Deadlines;
import io.pdconnector.producer.Commit;
import io.pdconnector.producer.CreditGrant;
import io.pdconnector.producer.Lease;
import io.pdconnector.producer.ProducerFacade;
import io.pdconnector.protocol.KvTransferParams;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import java.util.function.Supplier;

/** One engine step's batch on P, the same over HTTP ({@link EngineBatchResource}) and the engine socket. */
final class EngineBatches {

    private EngineBatches() {
    }

    /** Submits every item to P's loop, then awaits each within one deadline; a refused item is its own result. */
    static EngineBatchResponse run(ProducerFacade producer, EngineBatchRequest request) {
        List<Item<KvTransferParams>> commits = request.commits().stream()
                .map(c -> Item.submit(c.requestId(), () -> producer.submitCommit(commitOf(c)))).toList();
        List<Item<Void>> aborts = request.aborts().stream()
                .map(id -> Item.submit(id, () -> producer.submitAbort(id))).toList();
        List<Item<Boolean>> returns = request.returns().stream()
                .map(id -> Item.submit(id, () -> producer.submitReturn(id))).toList();
        List<Item<Boolean>> withdrawn = request.withdraw().stream()
                .map(id -> Item.submit(id, () -> producer.submitWithdraw(id))).toList();
        Item<CreditGrant> grant = request.grant() == null ? null : Item.submit("grant", () -> producer.submitGrant(
                request.grant().blocks(), request.grant().leases(), request.grant().extend(), request.grant().askId()));
        long deadlineAt = System.nanoTime() + producer.deadline().toNanos();
        EngineBatchResponse.ItemResult granted = grant == null ? null : grant.result(left(deadlineAt), g -> 200, g -> null);
        return new EngineBatchResponse(
                granted == null || granted.status() != 200 ? null : EngineBatchResponse.Grant.of(grant.future().join()),
                granted == null || granted.status() == 200 ? null : granted,
                commits.stream().map(i -> i.result(left(deadlineAt), params -> 200, KvTransferParams::toMap)).toList(),
                aborts.stream().map(i -> i.result(left(deadlineAt), v -> 204, v -> null)).toList(),
                returns.stream().map(i -> i.result(left(deadlineAt), held -> held ? 204 : 404, v -> null)).toList(),
                withdrawn.stream().map(i -> i.result(left(deadlineAt), held -> held ? 204 : 404, v -> null)).toList());
    }

    private static Commit commitOf(EngineBatchRequest.CommitItem c) {
        return new Commit(c.grantId(), c.requestId(), c.numTokens(),
                c.blockIds().stream().mapToInt(Integer::intValue).toArray(),
                c.leaseSlot() == null ? Lease.NO_SLOT : c.leaseSlot(), c.leaseNonce() == null ? 0 : c.leaseNonce());
    }

    private static Duration left(long deadlineAt) {
        return Duration.ofNanos(Math.max(0, deadlineAt - System.nanoTime()));
    }

    /** One item: its loop future, or the refusal it met before reaching the loop (nothing queued then). */
    private record Item<T>(String id, CompletableFuture<T> future, PdException refused) {

        static <T> Item<T> submit(String id, Supplier<CompletableFuture<T>> submit) {
            try {
                return new Item<>(id, submit.get(), null);
            } catch (PdException e) {
                return new Item<>(id, null, e);
            }
        }

        /** A domain failure is this item's problem; a bug fails the whole call (500), as for a single call. */
        EngineBatchResponse.ItemResult result(Duration deadline, Function<T, Integer> status,
                Function<T, Map<String, Object>> params) {
            try {
                if (refused != null) {
                    throw refused;
                }
                T value = Deadlines.await(future, deadline, "batch item " + id);
                return new EngineBatchResponse.ItemResult(id, status.apply(value), null, null, params.apply(value));
            } catch (PdException e) {
                Problem p = ProblemMappers.problemOf(e);
                return new EngineBatchResponse.ItemResult(id, p.status(), p.reason(), p.detail(), null);
            }
        }
    }
}
