package io.pdconnector.config;

import io.pdconnector.kv.ModelGeometry;

/** Settings of one instance's side: the shared {@link InstanceSettings} read through, once for both sides. */
public interface InstanceScoped {

    InstanceSettings instance();

    default String engineId() {
        return instance().engineId();
    }

    default int tpSize() {
        return instance().tpSize();
    }

    default ModelGeometry geometry() {
        return instance().geometry();
    }
}
