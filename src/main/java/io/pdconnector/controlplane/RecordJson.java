package io.pdconnector.controlplane;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.protocol.HandshakeMetadata;
import io.quarkus.jackson.ObjectMapperCustomizer;
import jakarta.inject.Singleton;

/**
 * The API's JSON writes a rank's handshake as the registry's codec does ({@link RecordCodec.HostKvUnsaid}), so
 * {@code /v1/registry/self} and {@code /v1/handshake} of a host-memory instance stay what they were.
 */
@Singleton
public class RecordJson implements ObjectMapperCustomizer {

    @Override
    public void customize(ObjectMapper mapper) {
        mapper.addMixIn(HandshakeMetadata.class, RecordCodec.HostKvUnsaid.class)
                .addMixIn(ModelGeometry.class, RecordCodec.GeometryDefaultsUnsaid.class);
    }
}
