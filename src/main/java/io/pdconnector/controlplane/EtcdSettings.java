package io.pdconnector.controlplane;

import io.pdconnector.config.RegistryConfig;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/** {@code pd.registry.etcd.*} as plain values. */
public record EtcdSettings(List<String> endpoints, String prefix, Duration ttl, Duration maxBackoff,
        Duration callTimeout, Optional<String> user, Optional<String> password, Optional<String> caFile,
        Optional<String> certFile, Optional<String> keyFile) {

    public EtcdSettings {
        endpoints = List.copyOf(endpoints);
        require(!endpoints.isEmpty(), "pd.registry.etcd.endpoints names no endpoint");
        require(prefix.startsWith("/") && prefix.endsWith("/"), "pd.registry.etcd.prefix must start and end "
                + "with /, got " + prefix);
        require(ttl.compareTo(Duration.ofSeconds(1)) >= 0, "pd.registry.etcd.ttl must be at least 1s");
        require(maxBackoff.compareTo(EtcdStore.FIRST_BACKOFF) >= 0, "pd.registry.etcd.max-backoff must be at least 100ms");
        require(callTimeout.compareTo(Duration.ofMillis(200)) >= 0,
                "pd.registry.etcd.call-timeout must be at least 200ms");
        require(user.isPresent() == password.isPresent(), "pd.registry.etcd.user and password go together");
        require(certFile.isPresent() == keyFile.isPresent(), "pd.registry.etcd.cert-file and key-file go together");
        boolean https = endpoints.stream().anyMatch(e -> e.startsWith("https://"));
        require(!(https || caFile.isPresent() || certFile.isPresent()) || endpoints.stream().allMatch(
                e -> e.startsWith("https://")), "pd.registry.etcd.endpoints mix http:// with TLS: " + endpoints);
    }

    public static EtcdSettings from(RegistryConfig.Etcd c) {
        return new EtcdSettings(c.endpoints(), c.prefix(), c.ttl(), c.maxBackoff(), c.callTimeout(), c.user(),
                c.password(), c.caFile(), c.certFile(), c.keyFile());
    }

    /** Plain-text endpoints, no authentication. */
    public static EtcdSettings of(List<String> endpoints, String prefix, Duration ttl, Duration maxBackoff,
            Duration callTimeout) {
        return new EtcdSettings(endpoints, prefix, ttl, maxBackoff, callTimeout, Optional.empty(), Optional.empty(),
                Optional.empty(), Optional.empty(), Optional.empty());
    }

    public EtcdSettings withUser(String name, String secret) {
        return new EtcdSettings(endpoints, prefix, ttl, maxBackoff, callTimeout, Optional.of(name),
                Optional.of(secret), caFile, certFile, keyFile);
    }

    public EtcdSettings withTls(Optional<String> ca, Optional<String> cert, Optional<String> key) {
        return new EtcdSettings(endpoints, prefix, ttl, maxBackoff, callTimeout, user, password, ca, cert, key);
    }

    boolean tls() {
        return caFile.isPresent() || certFile.isPresent() || endpoints.getFirst().startsWith("https://");
    }

    @Override
    public String toString() {
        // Never the password.
        return "etcd " + endpoints + " prefix " + prefix + " ttl " + ttl + user.map(u -> " user " + u).orElse("");
    }

    private static void require(boolean ok, String message) {
        if (!ok) {
            throw new IllegalArgumentException(message);
        }
    }
}
