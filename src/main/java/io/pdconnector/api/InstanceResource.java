package io.pdconnector.api;

import io.pdconnector.config.AuthRole;
import io.pdconnector.config.PdConfig;
import io.pdconnector.loop.LoopGauges;
import io.pdconnector.loop.StepLoop;
import io.pdconnector.runtime.ConnectorRuntime;
import io.pdconnector.transfer.TransferEngine;
import jakarta.annotation.security.RolesAllowed;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import java.util.LinkedHashMap;
import java.util.Map;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/** The instance at a glance, from what the loops publish each step (no round trip through them). */
@Path("/v1/status")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "operations")
public class InstanceResource {

    private final ConnectorRuntime runtime;
    private final TransferEngine engine;

    public InstanceResource(ConnectorRuntime runtime, TransferEngine engine) {
        this.runtime = runtime;
        this.engine = engine;
    }

    @GET
    @RolesAllowed(AuthRole.OPERATOR)
    @Operation(summary = "Role, blocks and slots held, live leases and pulls, queue depths, step-loop heartbeat")
    public Map<String, Object> status() {
        PdConfig config = runtime.config();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("engine_id", config.engineId());
        out.put("role", config.role().name());
        out.put("tp_size", config.tpSize());
        out.put("transfer_engine", engine.kind());
        out.put("lease_verification", config.lease().verification());
        runtime.leaseScheduler().ifPresent(p -> out.put("producer", side(p.gauges(), runtime.producerLoop().orElseThrow(),
                true)));
        runtime.pullScheduler().ifPresent(d -> {
            Map<String, Object> consumer = side(d.gauges(), runtime.consumerLoop().orElseThrow(), false);
            consumer.put("pulls_expired_unread", d.counters().expiredUnread.get());
            out.put("consumer", consumer);
        });
        return out;
    }

    private static Map<String, Object> side(LoopGauges g, StepLoop loop, boolean producer) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("blocks_in_use", g.blocksInUse());
        m.put("blocks_total", g.blocksTotal());
        if (producer) {
            m.put("slots_in_use", g.slotsInUse());
            m.put("slots_total", g.slotsTotal());
            m.put("leases_live", g.liveRequests());
        } else {
            m.put("pulls_live", g.liveRequests());
        }
        m.put("queue_depth", g.queued());
        m.put("commands_refused", g.commandsRefused());
        m.put("ms_since_last_step", loop.nanosSinceLastTurn() / 1_000_000);
        return m;
    }
}
