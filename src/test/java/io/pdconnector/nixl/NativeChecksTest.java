package io.pdconnector.nixl;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Agent names reach the helper's fixed-size C buffers only if they are short, NUL-free ASCII. */
class NativeChecksTest {

    @Test
    void anEngineIdAndRankIsAValidName() {
        assertDoesNotThrow(() -> NativeChecks.checkName("prefill-a.rank-7"));
        assertDoesNotThrow(() -> NativeChecks.checkName("~" + "x".repeat(NativeChecks.NAME_CAPACITY - 2)));
    }

    @Test
    void aNonAsciiNameIsRefusedWithTheName() {
        for (String name : new String[] {"préfill", "p\u0080", "p\u00ff", "p\u4e2d", "p\ud83d\ude00"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> NativeChecks.checkName(name));
            assertTrue(e.getMessage().contains("ASCII") && e.getMessage().contains(name), e.getMessage());
        }
    }

    @Test
    void blankLongOrNulNamesAreRefused() {
        for (String name : new String[] {null, "", " ", "a\0b", "x".repeat(NativeChecks.NAME_CAPACITY)}) {
            assertThrows(IllegalArgumentException.class, () -> NativeChecks.checkName(name));
        }
    }
}
