package io.pdconnector.router;

import io.pdconnector.controlplane.InstanceRecord;
import java.util.List;
import java.util.random.RandomGenerator;

/**
 * Two distinct candidates drawn at random, the less loaded kept: nearly least-loaded's balance
 * without every router herding onto the same instance between two registry updates.
 */
final class PowerOfTwoChoices implements PickPolicy {

    private final RandomGenerator random;

    PowerOfTwoChoices(RandomGenerator random) {
        this.random = random;
    }

    @Override
    public InstanceRecord choose(List<InstanceRecord> candidates, Load load) {
        int n = candidates.size();
        if (n == 1) {
            return candidates.getFirst();
        }
        int a = random.nextInt(n);
        int b = (a + 1 + random.nextInt(n - 1)) % n;
        InstanceRecord first = candidates.get(a);
        InstanceRecord second = candidates.get(b);
        return load.order().compare(second, first) < 0 ? second : first;
    }
}
