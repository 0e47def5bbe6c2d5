package io.pdconnector.router;

import io.pdconnector.controlplane.InstanceRecord;
import io.pdconnector.error.UnavailableException;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * Picks a P and a D from the registry's view: ready, in a role that serves the leg, with room, and
 * compatible with each other (same connector version and compatibility hash, so D accepts P's params
 * and reads its KV layout). Instances a failed attempt of the same request used are avoided while
 * any other will do; the policy chooses among the rest.
 */
public final class Picker {

    static final String NO_INSTANCE = "no-instance";

    private final Supplier<Collection<InstanceRecord>> fleet;
    private final PickPolicy producers;
    private final PickPolicy decoders;
    private final Load load;

    /** One policy object per side, so round-robin turns over P's and D's independently. */
    public Picker(Supplier<Collection<InstanceRecord>> fleet, PickPolicy producers, PickPolicy decoders, Load load) {
        this.fleet = fleet;
        this.producers = producers;
        this.decoders = decoders;
        this.load = load;
    }

    public Pick pick(Set<String> avoidProducers, Set<String> avoidDecoders) {
        List<InstanceRecord> all = List.copyOf(fleet.get());
        List<InstanceRecord> ds = all.stream().filter(Picker::servesDecode).sorted(byId()).toList();
        List<InstanceRecord> ps = all.stream().filter(Picker::servesPrefill)
                .filter(p -> ds.stream().anyMatch(d -> compatible(p, d))).sorted(byId()).toList();
        if (ps.isEmpty()) {
            throw new UnavailableException(NO_INSTANCE, "no ready producer with free blocks and slots and a compatible"
                    + " ready decoder is registered (" + describe(all) + ")");
        }
        InstanceRecord p = producers.choose(preferNot(ps, avoidProducers), load);
        List<InstanceRecord> forP = ds.stream().filter(d -> compatible(p, d)).toList();
        InstanceRecord d = decoders.choose(preferNot(forP, avoidDecoders), load);
        return new Pick(p, d);
    }

    /** Any ready decoder, for what every decoder answers alike (the model list). */
    public InstanceRecord anyDecoder() {
        List<InstanceRecord> ds = fleet.get().stream().filter(Picker::servesDecode).sorted(byId()).toList();
        if (ds.isEmpty()) {
            throw new UnavailableException(NO_INSTANCE, "no ready decoder is registered");
        }
        return decoders.choose(ds, load);
    }

    static boolean servesPrefill(InstanceRecord r) {
        return r.ready() && r.producer() && (r.role().equals("producer") || r.role().equals("both"))
                && r.capacity().freeBlocks() != 0 && r.capacity().freeSlots() != 0;
    }

    /** A decoder publishes no slots; free blocks are what it pulls into. */
    static boolean servesDecode(InstanceRecord r) {
        return r.ready() && (r.role().equals("consumer") || r.role().equals("both")) && r.capacity().freeBlocks() != 0;
    }

    static boolean compatible(InstanceRecord p, InstanceRecord d) {
        return p.connectorVersion() == d.connectorVersion() && p.compatHash().equals(d.compatHash());
    }

    private static List<InstanceRecord> preferNot(List<InstanceRecord> candidates, Set<String> avoid) {
        List<InstanceRecord> others = candidates.stream().filter(Predicate.not(r -> avoid.contains(r.engineId())))
                .toList();
        return others.isEmpty() ? candidates : others;
    }

    private static java.util.Comparator<InstanceRecord> byId() {
        return java.util.Comparator.comparing(InstanceRecord::engineId);
    }

    private static String describe(List<InstanceRecord> all) {
        if (all.isEmpty()) {
            return "the registry lists no instance";
        }
        StringBuilder b = new StringBuilder();
        for (InstanceRecord r : all) {
            b.append(b.isEmpty() ? "" : ", ").append(r.engineId()).append(' ').append(r.role())
                    .append(r.ready() ? " ready" : " not ready").append(r.producer() ? ", published" : "");
        }
        return b.toString();
    }
}
