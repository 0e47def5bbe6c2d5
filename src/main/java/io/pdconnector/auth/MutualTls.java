package io.pdconnector.auth;

import io.pdconnector.config.PdConfig;
import io.quarkus.runtime.Startup;
import io.quarkus.tls.TlsConfiguration;
import io.quarkus.tls.TlsConfigurationRegistry;
import io.quarkus.vertx.http.HttpServerOptionsCustomizer;
import io.vertx.core.http.ClientAuth;
import io.vertx.core.http.HttpServerOptions;
import jakarta.inject.Singleton;
import java.util.Optional;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * {@code pd.auth.mtls=true}: the HTTPS server requires a client certificate its trust store (the TLS
 * registry's, {@code quarkus.tls.trust-store.*}) trusts, and refuses the handshake otherwise. Set here at
 * run time because Quarkus fixes {@code quarkus.http.ssl.client-auth} when the jar is built (and with it
 * installs its own certificate-identity mechanism, which would compete with the bearer token for the
 * caller's role); the certificate only lets a client in, the token still says who it is.
 */
@Singleton
@Startup
public class MutualTls implements HttpServerOptionsCustomizer {

    private final boolean required;

    public MutualTls(PdConfig config, TlsConfigurationRegistry registry,
            @ConfigProperty(name = "quarkus.http.tls-configuration-name") Optional<String> httpTls) {
        this.required = config.auth().mtls();
        if (required) {
            // Without both stores the service would listen without asking for certificates: refuse to start.
            TlsConfiguration tls = (httpTls.isPresent() ? registry.get(httpTls.get()) : registry.getDefault()).orElse(null);
            if (tls == null || tls.getKeyStore() == null || tls.getTrustStore() == null) {
                throw new IllegalStateException("pd.auth.mtls=true needs HTTPS with a key store and a trust store for"
                        + " client certificates in the TLS registry (quarkus.tls.key-store.*, quarkus.tls.trust-store.*"
                        + httpTls.map(n -> ", configuration " + n).orElse("") + ")");
            }
        }
    }

    @Override
    public void customizeHttpsServer(HttpServerOptions options) {
        if (required) {
            options.setClientAuth(ClientAuth.REQUIRED);
        }
    }
}
