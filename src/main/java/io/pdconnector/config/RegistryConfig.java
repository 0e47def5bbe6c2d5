package io.pdconnector.config;

import io.smallrye.config.WithDefault;
import io.smallrye.config.WithName;
import jakarta.validation.constraints.Pattern;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * The control plane: where instances find each other (docs/configuration.md, "Registry";
 * docs/operations.md, "Registry stores"). D trusts only what the registry says about a producer, never the
 * request's remote_host.
 */
public interface RegistryConfig {
    /** {@code embedded} (this process only), {@code static} (pd.registry.static.peers) or {@code etcd}. */
    @WithDefault("embedded")
    @Pattern(regexp = "embedded|static|etcd")
    String store();

    /** Least time between two writes of this instance's record for capacity changes alone. */
    @WithDefault("1s")
    Duration publishMinInterval();

    @WithName("static")
    Static fixed();

    Etcd etcd();

    /** The static store: D fetches {@code GET /v1/registry/self} from each configured address. */
    interface Static {
        /** {@code host:port} of every peer instance, comma-separated; set by the operator, never by a request. */
        Optional<List<@Pattern(regexp = "[A-Za-z0-9.\\[\\]:-]{1,255}:[0-9]{1,5}") String>> peers();

        /** How often each peer's record is fetched again. */
        @WithDefault("2s")
        Duration refreshInterval();

        /** Deadline of one fetch. */
        @WithDefault("2s")
        Duration fetchTimeout();
    }

    /** The etcd store: records bound to an etcd lease, changes pushed by a watch. */
    interface Etcd {
        /** Client URLs of the etcd cluster, comma-separated. */
        @WithDefault("http://127.0.0.1:2379")
        List<String> endpoints();

        /** Key prefix of this fleet's records: {@code <prefix>instances/<engine-id>}. */
        @WithDefault("/pd-connector/")
        @Pattern(regexp = "/[A-Za-z0-9._/-]{0,200}/")
        String prefix();

        /** TTL of the etcd lease each record is bound to: how long a dead instance stays listed. */
        @WithDefault("10s")
        Duration ttl();

        /** Longest pause between reconnection attempts (it doubles from 100 ms up to this). */
        @WithDefault("5s")
        Duration maxBackoff();

        /** Deadline of one etcd call. */
        @WithDefault("3s")
        Duration callTimeout();

        /** etcd authentication (user and password); unset: none. */
        Optional<String> user();

        Optional<String> password();

        /** PEM CA file to verify etcd's TLS certificate with (https:// endpoints). */
        Optional<String> caFile();

        /** PEM client certificate and key for etcd's mutual TLS. */
        Optional<String> certFile();

        Optional<String> keyFile();
    }
}
