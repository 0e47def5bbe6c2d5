package io.pdconnector.config;

import io.quarkus.runtime.configuration.MemorySize;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import io.smallrye.config.WithName;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.Pattern;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * The one configuration root of pd-connector: every key is {@code pd.*}, with its default here and
 * its meaning in docs/configuration.md. Environment variables override (PD_LEASE_DURATION).
 * {@link ConnectorSettings#from} maps it, once and by name, to the settings records P, D and the step
 * loops take.
 */
@ConfigMapping(prefix = "pd")
public interface PdConfig {

    /**
     * What this instance serves: {@code producer} (P), {@code consumer} (D), {@code both}, or
     * {@code router} (the fleet's front door: no KV, no NIXL, P and D picked from the registry).
     */
    @WithDefault("both")
    Role role();

    /** This instance's engine id, as routers and peers name it (remote_engine_id). */
    @WithDefault("pd-local")
    @Pattern(regexp = "[A-Za-z0-9._-]{1,64}")
    String engineId();

    /** The host peers reach this instance's HTTP API at (remote_host in the params it exports). */
    @WithDefault("127.0.0.1")
    @NotBlank
    String advertisedHost();

    /** The port peers reach it at; default: quarkus.http.port. */
    Optional<@Min(1) @Max(65535) Integer> advertisedPort();

    /** The largest tensor-parallel size an instance may have. */
    int MAX_TP_SIZE = 64;

    @WithDefault("1")
    @Min(1)
    @Max(MAX_TP_SIZE)
    int tpSize();

    ModelConfig model();

    KvConfig kv();

    Lease lease();

    ConsumerSettings consumer();

    Http http();

    Metrics metrics();

    Transfer transfer();

    Nixl nixl();

    Loop loop();

    RegistryConfig registry();

    AuthConfig auth();

    Router router();

    FaultsConfig faults();

    enum Role {
        producer,
        consumer,
        both,
        router;

        public boolean producer() {
            return this == producer || this == both;
        }

        public boolean consumer() {
            return this == consumer || this == both;
        }
    }

    interface Lease {
        @WithDefault("30s")
        Duration duration();

        /** kv_lease_verification: off restores unverified pulls (L10). */
        @WithDefault("true")
        boolean verification();

        /** kv_lease_slots; 0 means num-blocks + max-num-seqs. */
        @WithDefault("0") @Min(0) int slots();

        /**
         * How long an engine may take from reserving a request to finishing it; an unfinished
         * reservation is then taken back as an abort would. The lease clock itself starts at finish.
         */
        @WithDefault("10m")
        Duration reservationTimeout();

        /**
         * How long after its export a lease lives at most, however often a decoder heartbeats it: a
         * decoder that never reads cannot hold P's blocks for good. At least the lease duration.
         */
        @WithDefault("10m")
        Duration maxLifetime();

        /** Where the nonce epoch is kept, so nonces never repeat across restarts (L1). */
        @WithDefault(".cache/pd-state")
        @NotBlank
        String stateDir();
    }

    interface ConsumerSettings {
        /** kv_load_failure_policy. */
        @WithDefault("fail")
        LoadFailurePolicy failurePolicy();

        /** Heartbeat period; default lease duration / 6. */
        Optional<Duration> heartbeatInterval();

        /** A pull not decided by then is declined with reason timeout. */
        @WithDefault("120s")
        Duration pullTimeout();

        /**
         * How long D keeps a received or recomputed pull's KV (its local blocks) for decode to read or
         * release; after that the loop releases it (counted as expired unread), so a caller that never
         * comes back (a router that died between pull and GET kv) cannot exhaust D's pool or keep its
         * request id taken.
         */
        @WithDefault("60s")
        Duration retention();

        /**
         * How many times a step polls a slot READ before leaving it to the next step. 1: over CMA the
         * READ is done within its post, and a spin only holds the loop when it is not (issue #13's
         * load runs: more pulls/s and a lower p99 at 1 than at 10,000).
         */
        @WithDefault("1") @Min(1) int slotReadSpins();

        /**
         * How many pulls one slot READ serves: it fetches up to this many lease slots (8 bytes each,
         * into a landing buffer per peer rank); more waiting pulls wait for the next READ.
         */
        @WithDefault("64") @Min(1) int slotChecksPerRead();

        /**
         * Most KV blocks a peer rank may declare in its handshake (default 1048576); a peer declaring
         * more is refused (422) before anything of it is loaded.
         */
        @WithDefault("1048576") @Min(1) int maxPeerBlocks();

        /**
         * Most descriptors one list D prepares for a peer may hold (default 4194304, 64 MiB of pairs):
         * blocks x runs per block (2 x layers when the TP sizes differ), and lease slots; a peer whose
         * lists would be longer is refused (422).
         */
        @WithDefault("4194304") @Min(1) int maxPeerDescriptors();

        /**
         * Most producers D keeps handshaken (metadata loaded, lists prepared) at once; beyond it the
         * least recently used peer without a pull in flight is dropped, and loaded again when it is next
         * announced or pulled from.
         */
        @WithDefault("64") @Min(1) int maxPeers();
    }

    /** The router role (docs/router.md): how it picks P and D, how often it retries, how long it waits. */
    interface Router {
        /** {@code round-robin}, {@code least-loaded} (queue depth and requests in flight, then free blocks) or {@code power-of-two}. */
        @WithDefault("round-robin")
        @Pattern(regexp = "round-robin|least-loaded|power-of-two")
        String policy();

        /** New attempts (prefill on another P, then the pull again) after a declined pull or a failed leg. */
        @WithDefault("2") @Min(0) @Max(10) int maxRetries();

        /** Deadline of opening a connection to P or D. */
        @WithDefault("2s")
        Duration connectTimeout();

        /** Deadline of the P leg, request to whole reply. */
        @WithDefault("60s")
        Duration prefillTimeout();

        /** Deadline of the D leg, request to the last byte of the reply (of the stream too). */
        @WithDefault("300s")
        Duration decodeTimeout();

        /** Deadline of the abort of P's lease sent when D failed or the client went away. */
        @WithDefault("2s")
        Duration abortTimeout();
    }

    interface Http {
        /** How long an HTTP request waits for the step loop before it answers 503. */
        @WithDefault("30s")
        Duration requestDeadline();

        /** Bounded command queue of each step loop; full answers 503 with Retry-After. */
        @WithDefault("1024") @Min(1) int queueCapacity();


        /**
         * Largest JSON request body (prefill, pull, reserve, completions, chat; default 4M, room for the
         * longest prompt as token ids); a larger body is refused with 413 before it is read.
         */
        @WithDefault("4M")
        MemorySize maxJsonBody();

        /**
         * Largest KV upload ({@code PUT /v1/producer/requests/{id}/kv}); default: the instance's whole KV
         * (num-blocks x block bytes x tp-size), the largest upload a reservation can ask for.
         */
        Optional<MemorySize> maxUploadBody();
    }

    /** The step loops (one for P, one for D): start-up and shutdown deadlines, idling, liveness. */
    interface Loop {
        /** How long a loop may take to open (NIXL agents, KV and slot registration) before start-up fails. */
        @WithDefault("60s")
        Duration openDeadline();

        /** How long shutdown waits for a loop to finish its step and close (deregister, release memory). */
        @WithDefault("10s")
        Duration stopDeadline();

        /**
         * Longest pause of D's idle loop (it spins, yields, then parks with a doubling pause up to this): how
         * late it sees what arrives without a command (a READ not done within its post, a due heartbeat),
         * against idle CPU. A command wakes a loop at once.
         */
        @WithDefault("1ms")
        Duration maxIdlePark();

        /**
         * The pause of P's idle loop, parked whole from its first idle step, or until its next lease expiry
         * or finish deadline if that is sooner: how late it sees what arrives without a command (a reader's
         * notification), against its wake-ups. A command wakes it at once.
         */
        @WithDefault("10ms")
        Duration producerIdlePark();

        /** A loop that has not finished a step for this long is reported not live (a step never blocks). */
        @WithDefault("10s")
        Duration stallThreshold();
    }

    interface Metrics {
        /** Prefix of the upstream-named metrics: "" or "vllm:" (vLLM's own prefix). */
        @WithDefault("none")
        @Pattern(regexp = "none|vllm:")
        String prefix();

        /**
         * The {@code model_name} label of the upstream-named metrics: vLLM labels its own with the served
         * model name ({@code --served-model-name}, else the model path), so set the same value for a vLLM
         * dashboard's model selector to find this instance's too. Prometheus drops an empty label, hence a word.
         */
        @WithDefault("unknown")
        @NotBlank
        String modelName();

        /** The {@code engine} label of the upstream-named metrics: vLLM's engine index (its data-parallel rank). */
        @WithDefault("0")
        @Pattern(regexp = "[0-9]{1,4}")
        String engine();
    }

    interface Transfer {
        /** {@code nixl} (real NIXL, the default) or {@code loopback} (in-process, single-process runs only). */
        @WithDefault("nixl")
        TransferKind engine();
    }

    interface Nixl {
        /** The unpacked nixl-cu12 wheel; scripts/fetch-nixl.sh puts it here, relative to the working directory. */
        @WithDefault(".cache/nixl/nixl-cu12-1.5.1")
        @NotBlank
        String home();

        /** NIXL's progress thread: needed on hosts without RDMA, where UCX emulates READs with messages. */
        @WithDefault("true")
        boolean progressThread();

        /**
         * The progress thread's poll timeout, in microseconds (NIXL rounds it up to whole ms): a message wakes the
         * thread at once, so this only bounds a missed event, against idle wake-ups; 0 spins a whole core even
         * when idle. {@code NixlDefaults#PROGRESS_DELAY_US} says why 10 ms.
         */
        @WithDefault("10000")
        @Min(0)
        long progressDelayUs();

        /**
         * UCX backend threads per agent (NIXL's {@code num_threads}), which split a READ's descriptors among them;
         * 0, the default, has none: they cost cores the step loops and the engine need (docs/performance.md, "Block
         * READs against memcpy", has what they bought here).
         */
        @WithDefault("0")
        @Min(0)
        @Max(64)
        int ucxThreads();

        /** Descriptors a UCX backend thread takes from a READ at a time ({@code split_batch_size}); 0: NIXL's own. */
        @WithDefault("0")
        @Min(0)
        int ucxSplitBatch();
    }

    enum TransferKind {
        nixl,
        loopback
    }
}
