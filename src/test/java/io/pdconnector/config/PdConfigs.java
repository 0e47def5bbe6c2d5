package io.pdconnector.config;

import io.quarkus.runtime.configuration.DurationConverter;
import io.quarkus.runtime.configuration.MemorySize;
import io.quarkus.runtime.configuration.MemorySizeConverter;
import io.smallrye.config.PropertiesConfigSource;
import io.smallrye.config.SmallRyeConfigBuilder;
import java.time.Duration;
import java.util.Map;

/** {@link PdConfig} as the service maps it from {@code pd.*} keys, without booting Quarkus. */
public final class PdConfigs {

    private PdConfigs() {
    }

    public static PdConfig from(Map<String, String> keys) {
        return new SmallRyeConfigBuilder()
                .withConverter(Duration.class, 200, new DurationConverter())
                .withConverter(MemorySize.class, 200, new MemorySizeConverter())
                .withMapping(PdConfig.class)
                .withSources(new PropertiesConfigSource(keys, "test", 500))
                .build()
                .getConfigMapping(PdConfig.class);
    }
}
