package io.pdconnector.controlplane;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.pdconnector.kv.KvAttention;
import io.pdconnector.kv.KvDtype;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.protocol.HandshakeMetadata;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Records as bytes in a store and back. Whatever a store hands over is checked before anyone uses it:
 * bounded size, a well-formed engine id and address, ranks that name their own engine in rank order.
 */
public final class RecordCodec {

    /** A record is a few KiB per rank (NIXL metadata); anything near this is not a record. */
    public static final int MAX_RECORD_BYTES = 1 << 20;
    private static final Pattern ENGINE_ID = Pattern.compile("[A-Za-z0-9._-]{1,64}");
    private static final Pattern EPOCH = Pattern.compile("[A-Za-z0-9-]{1,64}");
    private static final Pattern HOST = Pattern.compile("[A-Za-z0-9.:\\[\\]-]{1,255}");

    private final ObjectMapper json = new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES,
            false).addMixIn(HandshakeMetadata.class, HostKvUnsaid.class).addMixIn(ModelGeometry.class, GeometryDefaultsUnsaid.class);

    /**
     * A rank whose KV is in host memory is written without {@code kvMemory} and {@code kvDevice}, byte for byte
     * as before they existed (absent reads back as dram on device 0); only a VRAM rank says where its KV is.
     */
    public abstract static class HostKvUnsaid {
        @JsonInclude(value = JsonInclude.Include.CUSTOM, valueFilter = Dram.class)
        abstract String kvMemory();

        @JsonInclude(JsonInclude.Include.NON_DEFAULT)
        abstract int kvDevice();
    }

    /**
     * A geometry whose KV dtype has no name is written without it, a multi-head one without its attention, one of
     * one KV cache group without its groups and one of unit (or no) scales without its scales, byte for byte as
     * before each existed (absent attention reads back as MHA).
     */
    public abstract static class GeometryDefaultsUnsaid {
        @JsonInclude(JsonInclude.Include.NON_NULL)
        abstract KvDtype kvDtype();

        @JsonInclude(value = JsonInclude.Include.CUSTOM, valueFilter = Mha.class)
        abstract KvAttention attention();

        @JsonInclude(JsonInclude.Include.NON_NULL)
        abstract String kvGroups();

        @JsonInclude(JsonInclude.Include.NON_NULL)
        abstract String kvScales();
    }

    /** Jackson's value filter: equal to the attention left out. */
    public static final class Mha {
        @Override
        public boolean equals(Object value) {
            return KvAttention.MHA.equals(value);
        }

        @Override
        public int hashCode() {
            return KvAttention.MHA.hashCode();
        }
    }

    /** Jackson's value filter: equal to what is left out. */
    public static final class Dram {
        @Override
        public boolean equals(Object value) {
            return HandshakeMetadata.KV_DRAM.equals(value);
        }

        @Override
        public int hashCode() {
            return HandshakeMetadata.KV_DRAM.hashCode();
        }
    }

    public byte[] encode(InstanceRecord record) {
        try {
            return json.writeValueAsBytes(record);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("record of " + record.engineId() + " cannot be written", e);
        }
    }

    /** The record in {@code bytes}; {@link InvalidRecordException} says what is wrong with it. */
    public InstanceRecord decode(byte[] bytes) {
        if (bytes.length > MAX_RECORD_BYTES) {
            throw new InvalidRecordException("record of " + bytes.length + " bytes, more than " + MAX_RECORD_BYTES);
        }
        InstanceRecord r;
        try {
            r = json.readValue(bytes, InstanceRecord.class);
        } catch (IOException | RuntimeException e) {
            throw new InvalidRecordException("not a record: " + firstLine(e.getMessage()));
        }
        return check(r);
    }

    public String toText(InstanceRecord record) {
        return new String(encode(record), StandardCharsets.UTF_8);
    }

    static InstanceRecord check(InstanceRecord r) {
        if (!ENGINE_ID.matcher(r.engineId()).matches()) {
            throw new InvalidRecordException("engine id " + abbreviate(r.engineId()) + " is not [A-Za-z0-9._-]{1,64}");
        }
        if (!EPOCH.matcher(r.epoch()).matches() || !HOST.matcher(r.host()).matches() || r.port() < 1
                || r.port() > 65535) {
            throw new InvalidRecordException("record of " + r.engineId() + " has a malformed epoch or address");
        }
        if (!List.of("producer", "consumer", "both", "router").contains(r.role())) {
            throw new InvalidRecordException("record of " + r.engineId() + " has role " + abbreviate(r.role()));
        }
        List<HandshakeMetadata> ranks = r.ranks();
        for (int i = 0; i < ranks.size(); i++) {
            HandshakeMetadata m = ranks.get(i);
            if (m == null || !m.engineId().equals(r.engineId()) || m.rank() != i || m.tpSize() != ranks.size()) {
                throw new InvalidRecordException("record of " + r.engineId() + " has rank " + i
                        + " that is not its own rank " + i + " of " + ranks.size());
            }
        }
        return r;
    }

    private static String abbreviate(String s) {
        return s.length() <= 80 ? "'" + s + "'" : "'" + s.substring(0, 80) + "...'";
    }

    private static String firstLine(String message) {
        if (message == null) {
            return "unreadable";
        }
        String line = message.lines().findFirst().orElse("");
        return line.length() <= 200 ? line : line.substring(0, 200);
    }

    /** A store held something that is not a valid record; it is counted and ignored. */
    public static final class InvalidRecordException extends RuntimeException {
        public InvalidRecordException(String message) {
            super(message);
        }
    }
}
