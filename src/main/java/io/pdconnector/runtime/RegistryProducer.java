package io.pdconnector.runtime;

import io.pdconnector.controlplane.EmbeddedRegistry;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;

/** The one in-process registry of this instance, shared by its loops and the handshake directory. */
public class RegistryProducer {

    @Produces
    @Singleton
    EmbeddedRegistry registry() {
        return new EmbeddedRegistry();
    }
}
