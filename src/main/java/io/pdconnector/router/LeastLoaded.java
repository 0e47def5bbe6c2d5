package io.pdconnector.router;

import io.pdconnector.controlplane.InstanceRecord;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The least loaded candidate ({@link Load#order}); equally loaded ones take turns, because an idle
 * fleet publishes equal figures and would otherwise send everything to the first engine id.
 */
final class LeastLoaded implements PickPolicy {

    private final AtomicLong turn = new AtomicLong();

    @Override
    public InstanceRecord choose(List<InstanceRecord> candidates, Load load) {
        var order = load.order();
        InstanceRecord best = candidates.stream().min(order).orElseThrow();
        List<InstanceRecord> tied = candidates.stream().filter(r -> order.compare(r, best) == 0).toList();
        return tied.get((int) Math.floorMod(turn.getAndIncrement(), (long) tied.size()));
    }
}
