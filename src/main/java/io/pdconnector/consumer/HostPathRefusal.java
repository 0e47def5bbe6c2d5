package io.pdconnector.consumer;

import java.util.Map;

/**
 * The sentence a peer is refused with when UCX serves READs of GPU memory over a host path: what it took, and the
 * cause that fits how far the peer is. On one node UCX's GPU transport is {@code cuda_ipc}, which needs P and D in
 * one PID namespace with pd-connector's legacy IPC handles, GETs it has not turned off
 * ({@code UCX_CUDA_IPC_ENABLE_GET_ZCOPY=auto} turns them off where NVML sees no active NVLink) and a
 * {@code UCX_TLS} that allows it; across nodes it is RDMA that reads GPU memory (GPUDirect RDMA). The UCX settings
 * named are this process's.
 */
final class HostPathRefusal {

    private HostPathRefusal() {
    }

    static String sentence(String producer, int prefillRank, int decodeRank, ReadTransports.ChannelTransport taken,
            Map<String, String> environment) {
        return "producer " + producer + " rank " + prefillRank + "'s KV is in GPU memory, and UCX reads it into decode"
                + " rank " + decodeRank + " over a host path, " + taken.describe() + ": " + cause(taken, environment)
                + " pd-connector serves no pull of this peer over it (pd.kv.vram-host-path=refuse, the default);"
                + " fix the cause, or set pd.kv.vram-host-path=allow to accept host-speed READs";
    }

    private static String cause(ReadTransports.ChannelTransport taken, Map<String, String> environment) {
        String tls = setting(environment, "UCX_TLS", "all");
        if (taken.reach().contains("inter-node")) {
            return "P is on another node, and UCX found no RDMA device here that reads GPU memory: GPUDirect RDMA"
                    + " needs an RDMA NIC in both pods, the GPU driver's peer memory (nvidia-peermem) or dma-buf,"
                    + " and UCX_TLS allowing rc (UCX_TLS=" + tls + ").";
        }
        return "P is on this node, and UCX's cuda_ipc did not serve the READ. It needs P and D in one PID"
                + " namespace (pods each in their own do not reach each other with legacy IPC handles; docs/gpu.md,"
                + " \"Topologies\"), its GETs on (UCX_CUDA_IPC_ENABLE_GET_ZCOPY="
                + setting(environment, "UCX_CUDA_IPC_ENABLE_GET_ZCOPY", "auto")
                + "; auto turns them off where NVML sees no active NVLink, y turns them on), and UCX_TLS allowing"
                + " cuda_ipc (UCX_TLS=" + tls + ").";
    }

    private static String setting(Map<String, String> environment, String name, String unsetMeans) {
        String value = environment.get(name);
        return value == null ? "unset, so " + unsetMeans : value;
    }
}
