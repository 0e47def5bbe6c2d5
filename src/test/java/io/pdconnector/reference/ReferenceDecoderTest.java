package io.pdconnector.reference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

class ReferenceDecoderTest {

    @Test
    void theSameSeedGivesTheSameWordsAndAShortAnswerIsAPrefixOfALongerOne() {
        List<String> long16 = ReferenceDecoder.decode(42, 16);
        assertEquals(16, long16.size());
        assertEquals(long16, ReferenceDecoder.decode(42, 16));
        assertEquals(long16.subList(0, 1), ReferenceDecoder.decode(42, 1));
        assertEquals(List.of(), ReferenceDecoder.decode(42, 0));
    }

    @Test
    void anotherSeedGivesAnotherAnswer() {
        assertNotEquals(ReferenceDecoder.decode(42, 16), ReferenceDecoder.decode(43, 16));
    }

    @Test
    void aNegativeCountIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> ReferenceDecoder.decode(1, -1));
    }
}
