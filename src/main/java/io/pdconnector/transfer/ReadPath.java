package io.pdconnector.transfer;

import java.util.List;
import java.util.Objects;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * How the transfer library said it serves READs by one local agent from one kind of remote memory into one kind
 * of local memory: for each message-size range, the protocol and the transports it uses. UCX reports this when it
 * first selects a protocol for an endpoint configuration (NIXL's UCX backend; {@code io.pdconnector.nixl}).
 *
 * @param agent the local agent whose READs these are
 * @param reach how far the peer is as the library classed it: {@code self}, {@code intra-node} or
 *     {@code inter-node} in UCX's words
 * @param localMemory the memory READ into: {@code host}, {@code cuda}, ...
 * @param remoteMemory the memory READ from
 * @param routes the protocol of each size range, in order of size
 */
public record ReadPath(String agent, String reach, String localMemory, String remoteMemory, List<Route> routes) {

    /** Transports that READ GPU memory without a host copy: CUDA IPC on one node, RDMA (GPUDirect) across nodes. */
    private static final List<String> GPU_DIRECT = List.of("cuda_ipc", "rc_mlx5", "rc_verbs", "dc_mlx5", "gga",
            "srd");

    public ReadPath {
        Objects.requireNonNull(agent, "agent");
        Objects.requireNonNull(reach, "reach");
        Objects.requireNonNull(localMemory, "localMemory");
        Objects.requireNonNull(remoteMemory, "remoteMemory");
        routes = List.copyOf(routes);
    }

    /**
     * One size range: READs of {@code minBytes..maxBytes} bytes ({@code Long.MAX_VALUE} for no bound) take
     * {@code protocol} over {@code lanes}, each {@code transport/device} as the library names them.
     */
    public record Route(long minBytes, long maxBytes, String protocol, List<String> lanes) {

        public Route {
            Objects.requireNonNull(protocol, "protocol");
            lanes = List.copyOf(lanes);
        }

        public SortedSet<String> transports() {
            SortedSet<String> names = new TreeSet<>();
            for (String lane : lanes) {
                int slash = lane.indexOf('/');
                names.add(slash < 0 ? lane : lane.substring(0, slash));
            }
            return names;
        }
    }

    /** The transports of every route that serves READs of {@code minBytes} or more. */
    public SortedSet<String> transportsFrom(long minBytes) {
        SortedSet<String> names = new TreeSet<>();
        for (Route r : routes) {
            if (r.maxBytes() >= minBytes) {
                names.addAll(r.transports());
            }
        }
        return names;
    }

    /** Whether {@code transport} reads GPU memory without a host copy or a socket. */
    public static boolean gpuDirect(String transport) {
        return GPU_DIRECT.contains(transport);
    }

    /** {@code memory} as this record names it, for a list of that type. */
    public static String memoryName(MemoryType type) {
        return type == MemoryType.VRAM ? "cuda" : "host";
    }
}
