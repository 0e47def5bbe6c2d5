package io.pdconnector.controlplane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.error.IncompatiblePeerException;
import io.pdconnector.kv.KvAttention;
import io.pdconnector.kv.KvDtype;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.testing.Cluster;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The KV cache's element type by name in the handshake: bytes of one fp8 format read as the other (or bfloat16
 * as float16) are another model's KV, so a named type is part of the compatibility hash and a peer of another
 * type is refused, naming both. A geometry with no name hashes and is written as before names existed.
 */
class HandshakeKvDtypeTest {

    private static final int V = HandshakeMetadata.CONNECTOR_VERSION;
    private static final ModelGeometry UNNAMED = new ModelGeometry(2, 2, 8, 4, 1);
    private static final ModelGeometry E4M3 = named(KvDtype.FP8_E4M3);
    private static final ModelGeometry E5M2 = named(KvDtype.FP8_E5M2);
    private final RecordCodec codec = new RecordCodec();

    private static ModelGeometry named(KvDtype dtype) {
        return new ModelGeometry(2, 2, 8, 4, 1, dtype);
    }

    private static HandshakeMetadata rank(ModelGeometry g) {
        return new HandshakeMetadata("p", 0, 1, "p-p0", new byte[] {1, 2}, 1 << 20, 8L * g.blockBytes(1), g,
                HandshakeMetadata.LAYOUT, 8, 0, 0, V, g.compatHash(V));
    }

    private static InstanceRecord record(HandshakeMetadata m) {
        return new InstanceRecord("p", "producer", "127.0.0.1", 8080, 1, "e1", V, m.compatHash(), List.of(m),
                InstanceRecord.Capacity.UNKNOWN, true, 1);
    }

    @Test
    void aPeerWithAnotherKvDtypeOfTheSameWidthIsRefusedNamingBoth() {
        assertNotEquals(E4M3.compatHash(V), E5M2.compatHash(V));
        assertNotEquals(E4M3.compatHash(V), UNNAMED.compatHash(V), "a named type is not the unnamed width");
        IncompatiblePeerException e = assertThrows(IncompatiblePeerException.class,
                () -> rank(E5M2).requireCompatible(E4M3, V));
        assertTrue(e.getMessage().contains("kvDtype=FP8_E5M2") && e.getMessage().contains("kvDtype=FP8_E4M3"),
                e.getMessage());
        assertThrows(IncompatiblePeerException.class, () -> rank(UNNAMED).requireCompatible(E4M3, V));
        rank(E4M3).requireCompatible(E4M3, V);
    }

    @Test
    void aNamedTypeSurvivesTheRegistryAndAnUnnamedOneIsWrittenAsBefore() {
        HandshakeMetadata m = codec.decode(codec.encode(record(rank(E4M3)))).ranks().getFirst();
        assertEquals(KvDtype.FP8_E4M3, m.geometry().kvDtype());
        m.requireCompatible(E4M3, V);
        String unnamed = codec.toText(record(rank(UNNAMED)));
        assertFalse(unnamed.contains("kvDtype"), "an unnamed geometry's record is today's: " + unnamed);
        assertEquals(UNNAMED, codec.decode(codec.encode(record(rank(UNNAMED)))).ranks().getFirst().geometry());
        assertEquals(new ModelGeometry(2, 2, 8, 4, 2).compatHash(V), Cluster.SMALL.compatHash(V));
    }

    @Test
    void mlaIsPartOfTheHandshakeAndSurvivesTheRegistryWhileMhaIsWrittenAsBefore() {
        ModelGeometry mla = new ModelGeometry(2, 1, 576, 4, 2, null, KvAttention.MLA);
        ModelGeometry mqa = new ModelGeometry(2, 1, 576, 4, 2);
        assertNotEquals(mla.compatHash(V), mqa.compatHash(V), "a latent is not one K and one V head");
        IncompatiblePeerException e = assertThrows(IncompatiblePeerException.class,
                () -> rank(mqa).requireCompatible(mla, V));
        assertTrue(e.getMessage().contains("attention=MLA") && e.getMessage().contains("attention=MHA"),
                e.getMessage());
        HandshakeMetadata m = codec.decode(codec.encode(record(rank(mla)))).ranks().getFirst();
        assertEquals(KvAttention.MLA, m.geometry().attention());
        m.requireCompatible(mla, V);
        assertFalse(codec.toText(record(rank(mqa))).contains("attention"), "an MHA record is today's");
        IllegalArgumentException wide = assertThrows(IllegalArgumentException.class,
                () -> new ModelGeometry(2, 2, 576, 4, 2, null, KvAttention.MLA));
        assertTrue(wide.getMessage().contains("kv-heads must be 1"), wide.getMessage());
        assertEquals(java.util.Arrays.stream(KvAttention.values()).map(KvAttention::wire)
                .collect(java.util.stream.Collectors.joining("|")), KvAttention.NAMES);
    }

    @Test
    void kvCacheGroupsArePartOfTheHandshakeAndUnsetOnesAreWrittenAsBefore() {
        ModelGeometry gemma = new ModelGeometry(2, 2, 8, 4, 2, null, KvAttention.MHA, "window:64/1,full/1");
        ModelGeometry wider = new ModelGeometry(2, 2, 8, 4, 2, null, KvAttention.MHA, "window:128/1,full/1");
        ModelGeometry one = new ModelGeometry(2, 2, 8, 4, 2);
        assertNotEquals(gemma.compatHash(V), wider.compatHash(V), "another window is another model's cache");
        assertNotEquals(gemma.compatHash(V), one.compatHash(V));
        assertEquals(one.compatHash(V), new ModelGeometry(2, 2, 8, 4, 2, null, KvAttention.MHA, null).compatHash(V));
        IncompatiblePeerException e = assertThrows(IncompatiblePeerException.class,
                () -> rank(wider).requireCompatible(gemma, V));
        assertTrue(e.getMessage().contains("kvGroups=window:128/1,full/1")
                && e.getMessage().contains("kvGroups=window:64/1,full/1"), e.getMessage());
        assertEquals("window:64/1,full/1", codec.decode(codec.encode(record(rank(gemma)))).ranks().getFirst().geometry()
                .kvGroups());
        assertFalse(codec.toText(record(rank(one))).contains("kvGroups"), "a record of one group is today's");
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> new ModelGeometry(2, 2, 8, 4, 2, null, KvAttention.MHA, "window:0/1,full/1"));
        assertTrue(bad.getMessage().contains("not a list of full/<layers> and window:<tokens>/<layers>"), bad.getMessage());
    }

    @Test
    void anFp8CachesScalesArePartOfTheHandshakeAndUnitScalesAreWrittenAsBefore() {
        ModelGeometry scaled = scaled("0123456789abcdef");
        ModelGeometry other = scaled("fedcba9876543210");
        assertNotEquals(scaled.compatHash(V), other.compatHash(V), "the same bytes under other scales differ");
        assertNotEquals(scaled.compatHash(V), E4M3.compatHash(V));
        assertEquals(E4M3, scaled("unit"), "unit scales are the scales of a cache that names none");
        assertEquals(E4M3.compatHash(V), scaled("unit").compatHash(V));
        IncompatiblePeerException e = assertThrows(IncompatiblePeerException.class,
                () -> rank(other).requireCompatible(scaled, V));
        assertTrue(e.getMessage().contains("kvScales=fedcba9876543210")
                && e.getMessage().contains("kvScales=0123456789abcdef"), e.getMessage());
        assertThrows(IncompatiblePeerException.class, () -> rank(E4M3).requireCompatible(scaled, V));
        assertEquals("0123456789abcdef", codec.decode(codec.encode(record(rank(scaled)))).ranks().getFirst()
                .geometry().kvScales());
        assertFalse(codec.toText(record(rank(E4M3))).contains("kvScales"), "a record of unit scales is today's");
        IllegalArgumentException bf16 = assertThrows(IllegalArgumentException.class,
                () -> new ModelGeometry(2, 2, 8, 4, 2, KvDtype.BFLOAT16, KvAttention.MHA, null, "0123456789abcdef"));
        assertTrue(bf16.getMessage().contains("belong to a quantized cache") && bf16.getMessage().contains("bfloat16"),
                bf16.getMessage());
        assertThrows(IllegalArgumentException.class, () -> scaled("0123"));
    }

    private static ModelGeometry scaled(String scales) {
        return new ModelGeometry(2, 2, 8, 4, 1, KvDtype.FP8_E4M3, KvAttention.MHA, null, scales);
    }

    @Test
    void aNameOfAnotherWidthThanTheGeometrysIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new ModelGeometry(2, 2, 8, 4, 2, KvDtype.FP8_E4M3));
        assertTrue(e.getMessage().contains("fp8_e4m3 is 1 bytes, not the 2"), e.getMessage());
        assertEquals(KvDtype.BFLOAT16, KvDtype.of("bfloat16"));
        // the configuration's pattern must be a constant, so it is written out: it names every type, no other
        assertEquals(java.util.Arrays.stream(KvDtype.values()).map(KvDtype::wire)
                .collect(java.util.stream.Collectors.joining("|")), KvDtype.NAMES);
        assertThrows(IllegalArgumentException.class, () -> KvDtype.of("fp8_inc"));
    }
}
