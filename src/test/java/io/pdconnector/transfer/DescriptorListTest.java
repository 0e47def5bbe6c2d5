package io.pdconnector.transfer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class DescriptorListTest {

    @Test
    void contiguousSlicesAreFlatAddressLengthPairs() {
        DescriptorList list = DescriptorList.contiguous(1000, 16, 3);

        assertEquals(3, list.count());
        assertArrayEquals(new long[] {1000, 16, 1016, 16, 1032, 16}, list.flatPairs());
    }

    @Test
    void growsPastItsExpectedSize() {
        DescriptorList list = new DescriptorList(1);
        for (int i = 0; i < 100; i++) {
            list.add(4096L * (i + 1), 8);
        }
        assertEquals(100, list.count());
        assertEquals(4096L * 100, list.address(99));
    }

    @Test
    void rejectsNullAddressesNonPositiveLengthsAndOutOfRangeIndices() {
        DescriptorList list = new DescriptorList(1);
        assertThrows(IllegalArgumentException.class, () -> list.add(0, 8));
        assertThrows(IllegalArgumentException.class, () -> list.add(8, 0));
        assertThrows(IndexOutOfBoundsException.class, () -> list.address(0));
        assertEquals(0, list.count());
    }

    @Test
    void aListIsOfOneMemoryTypeAndDramIsDeviceZero() {
        assertEquals(MemoryType.DRAM, new DescriptorList(1).memoryType());
        assertEquals(MemoryType.DRAM, DescriptorList.contiguous(1000, 8, 2).memoryType());
        DescriptorList vram = new DescriptorList(1, MemoryType.VRAM, 3);
        assertEquals(MemoryType.VRAM, vram.memoryType());
        assertEquals(3, vram.deviceId());
        assertThrows(IllegalArgumentException.class, () -> new DescriptorList(1, MemoryType.DRAM, 1));
        assertThrows(IllegalArgumentException.class, () -> new DescriptorList(1, MemoryType.VRAM, -1));
        assertThrows(NullPointerException.class, () -> new DescriptorList(1, null, 0));
    }
}
