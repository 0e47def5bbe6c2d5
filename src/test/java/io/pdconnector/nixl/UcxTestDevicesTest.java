package io.pdconnector.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * The build runs its tests' UCX on loopback (and shared memory) only (pom.xml: UCX_NET_DEVICES=lo for surefire
 * and failsafe, inherited by the services the ITs start). With every device, an agent created while a network
 * interface came or went failed its intra-agent setup ("Destination is unreachable", pdx_agent_create BACKEND
 * (-2)): NixlUcxThreadsContractTest failed so in a full test run while another checkout's NetworkFaultsIT made and
 * removed its veths, and with a veth added and removed every 250 ms 3 to 6 tests of each of NixlAgentContractTest
 * and NixlUcxThreadsContractTest failed so in each of four runs (none with UCX_NET_DEVICES=lo).
 */
class UcxTestDevicesTest {

    @Test
    void theTestsUcxUsesLoopbackOnly() {
        assertEquals("lo", System.getenv("UCX_NET_DEVICES"), "UCX_NET_DEVICES of the test JVM (pom.xml)");
    }
}
