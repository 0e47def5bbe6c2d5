package io.pdconnector.router;

import io.pdconnector.controlplane.InstanceRecord;
import java.util.List;
import java.util.random.RandomGenerator;

/**
 * Chooses one instance among eligible candidates (never empty, sorted by engine id). Pluggable: a new
 * policy is an implementation and a name in {@link #named}.
 */
public interface PickPolicy {

    InstanceRecord choose(List<InstanceRecord> candidates, Load load);

    /** {@code round-robin}, {@code least-loaded} or {@code power-of-two} ({@code pd.router.policy}). */
    static PickPolicy named(String name, RandomGenerator random) {
        return switch (name) {
            case "round-robin" -> new RoundRobin();
            case "least-loaded" -> new LeastLoaded();
            case "power-of-two" -> new PowerOfTwoChoices(random);
            default -> throw new IllegalArgumentException("pd.router.policy=" + name
                    + " is not a policy (round-robin, least-loaded, power-of-two)");
        };
    }
}
