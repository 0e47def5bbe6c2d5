package io.pdconnector.bench.load;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

class TokenDistributionTest {

    @Test
    void fixed_alwaysGivesItsLength_andItsBlocks() {
        TokenDistribution t = TokenDistribution.parse("512");
        Random r = new Random(1);
        for (int i = 0; i < 100; i++) {
            assertEquals(512, t.sample(r));
        }
        assertEquals(32, t.maxBlocks(16));
        assertEquals("t512", t.label());
        assertEquals("512", t.toString());
        assertEquals(2, TokenDistribution.parse("32").maxBlocks(16));
        assertEquals(3, TokenDistribution.parse("33").maxBlocks(16), "a partly filled block is a block");
    }

    @Test
    void uniform_coversBothEnds_andNothingOutside_withTheExpectedMean() {
        TokenDistribution t = TokenDistribution.parse(" 32 : 40 ");
        Random r = new Random(42);
        int[] seen = new int[41];
        long sum = 0;
        int n = 90_000;
        for (int i = 0; i < n; i++) {
            int v = t.sample(r);
            assertTrue(v >= 32 && v <= 40, "sample " + v);
            seen[v]++;
            sum += v;
        }
        for (int v = 32; v <= 40; v++) { // 9 values, 10,000 expected each; 5 sigma is about 470
            assertTrue(Math.abs(seen[v] - 10_000) < 500, v + " seen " + seen[v] + " times");
        }
        assertEquals(36.0, t.meanTokens());
        assertEquals(36.0, sum / (double) n, 0.05);
        assertEquals("t32-40", t.label());
        assertEquals(3, t.maxBlocks(16));
    }

    @Test
    void badRanges_areRefused() {
        assertThrows(IllegalArgumentException.class, () -> TokenDistribution.parse("0"));
        assertThrows(IllegalArgumentException.class, () -> TokenDistribution.parse("40:32"));
        assertThrows(IllegalArgumentException.class, () -> TokenDistribution.parse("262145"));
        assertThrows(IllegalArgumentException.class, () -> TokenDistribution.parse("1:2:3"));
        assertEquals(new TokenDistribution(262_144, 262_144), TokenDistribution.parse("262144"));
    }

    @Test
    void workload_isReproducible_distinctPerRequest_andInTheVocabulary() {
        Workload w = new Workload("run-1", TokenDistribution.parse("16:64"), 5);
        Workload again = new Workload("run-1", TokenDistribution.parse("16:64"), 5);

        Workload.Request a = w.request(3);
        assertEquals("run-1-3", a.id());
        assertArrayEquals(a.tokens(), again.request(3).tokens());
        assertNotEquals(java.util.Arrays.toString(a.tokens()), java.util.Arrays.toString(w.request(4).tokens()));
        for (int i = 0; i < 200; i++) {
            int[] tokens = w.request(i).tokens();
            assertTrue(tokens.length >= 16 && tokens.length <= 64);
            for (int tok : tokens) {
                assertTrue(tok >= 0 && tok < Workload.VOCAB);
            }
        }
        assertThrows(IllegalArgumentException.class, () -> new Workload("a:b", TokenDistribution.parse("1"), 1),
                "ids travel in NIXL notifications: no ':'");
    }
}
