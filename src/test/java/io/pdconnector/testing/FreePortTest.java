package io.pdconnector.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * A port {@link FreePort} hands out is never handed out again by the same JVM: an IT starts several
 * services before the first has bound its port, and two of them given the same port lose one start
 * ("address in use"). 2,000 draws from about 16,000 ports repeat one all but surely when nothing prevents it.
 */
class FreePortTest {

    @Test
    void noPortIsHandedOutTwice() throws Exception {
        Set<Integer> ports = new HashSet<>();
        int draws = 2_000;
        for (int i = 0; i < draws; i++) {
            ports.add(FreePort.pick());
        }
        assertEquals(draws, ports.size(), "every draw a port no earlier draw had");
    }
}
