package io.pdconnector.router;

import io.pdconnector.controlplane.InstanceRecord;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/** Each candidate in turn, whatever its load. */
final class RoundRobin implements PickPolicy {

    private final AtomicLong next = new AtomicLong();

    @Override
    public InstanceRecord choose(List<InstanceRecord> candidates, Load load) {
        return candidates.get((int) Math.floorMod(next.getAndIncrement(), (long) candidates.size()));
    }
}
