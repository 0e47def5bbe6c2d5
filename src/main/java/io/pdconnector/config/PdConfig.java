package io.pdconnector.config;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;

/** The one configuration root of pd-connector: every key is {@code pd.*}, documented in the README. */
@ConfigMapping(prefix = "pd")
public interface PdConfig {

    Transfer transfer();

    Nixl nixl();

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

        /** Pause of the progress thread between polls, in microseconds; 0 spins a whole core even when idle. */
        @WithDefault("100")
        @Min(0)
        long progressDelayUs();
    }

    enum TransferKind {
        nixl,
        loopback
    }
}
