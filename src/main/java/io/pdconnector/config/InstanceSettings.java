package io.pdconnector.config;

import io.pdconnector.kv.ModelGeometry;
import java.util.Objects;

/**
 * What P and D settings share: the engine id peers know this instance by, its tensor-parallel ranks,
 * and the model geometry those ranks split (the tp size must divide the model's KV heads).
 */
public record InstanceSettings(String engineId, int tpSize, ModelGeometry geometry) {

    public InstanceSettings {
        Objects.requireNonNull(engineId, "engineId");
        Objects.requireNonNull(geometry, "geometry");
        geometry.headsPerRank(tpSize);
    }
}
