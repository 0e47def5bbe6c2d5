package io.pdconnector.router;

import io.pdconnector.controlplane.InstanceRecord;
import java.util.Comparator;

/**
 * How busy an instance is, as a router can know it: what the instance last published (queue depth,
 * free blocks; at most pd.registry.publish-min-interval old) plus the requests this router has in
 * flight to it now, which the registry cannot show yet.
 */
@FunctionalInterface
public interface Load {

    /** This router's requests picked for {@code engineId} and not yet answered. */
    int inFlight(String engineId);

    /** The busier instance is the greater: more waiting work (in flight + queued), then fewer free blocks. */
    default Comparator<InstanceRecord> order() {
        return Comparator.<InstanceRecord>comparingLong(r -> inFlight(r.engineId()) + known(r.capacity().queueDepth()))
                .thenComparingLong(r -> -known(r.capacity().freeBlocks()));
    }

    /** -1 is "not published": counted as nothing, so an instance is not avoided for being quiet. */
    private static long known(int figure) {
        return Math.max(0, figure);
    }
}
