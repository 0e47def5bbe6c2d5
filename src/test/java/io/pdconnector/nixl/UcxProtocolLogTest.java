package io.pdconnector.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.transfer.ReadPath;
import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The log file pd-connector gives UCX, read back: each drain flushes UCX's stream first and hands an agent the
 * tables printed for it; UCX's own lines are handed on by the forwarder as well as by drains; a table the forwarder
 * found waits for its agent; a line UCX has half written waits for its end; a file UCX started again is read again.
 */
class UcxProtocolLogTest {

    @TempDir
    Path dir;
    private final List<String> messages = new ArrayList<>();
    private final AtomicInteger flushes = new AtomicInteger();

    private UcxProtocolLog log(Path file) throws Exception {
        MethodHandle count = MethodHandles.lookup().findVirtual(AtomicInteger.class, "incrementAndGet",
                MethodType.methodType(int.class)).bindTo(flushes);
        MethodHandle flush = MethodHandles.dropReturn(count);
        return UcxProtocolLog.at(file, () -> flush, messages::add);
    }

    private static String table(String worker, String lane) {
        String p = "[1796623554.777662] [vm:3207 :0]   ";
        return p + "+--------+-------------+------------------+\n"
                + p + "| " + worker + " intra-node cfg#1 |\n"
                + p + "| remote memory read by ucp_get*(multi) into host memory from host |\n"
                + p + "+--------+-------------+------------------+\n"
                + p + "| Range  | Description |      Config      |\n"
                + p + "+--------+-------------+------------------+\n"
                + p + "| 0..inf | zero-copy   | " + lane + " |\n"
                + p + "+--------+-------------+------------------+\n";
    }

    /** A drain as an agent makes it, with its worker's name as UCX keeps it. */
    private static List<ReadPath> drain(UcxProtocolLog log, String agent) {
        return log.drain(agent, UcxProtocolLog.workerName(agent));
    }

    private static void append(Path file, String text) throws IOException {
        Files.writeString(file, text, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }

    @Test
    void aDrainFlushesUcxAndHandsEachAgentItsOwnTablesOnce() throws Exception {
        Path file = dir.resolve("ucx.log");
        UcxProtocolLog log = log(file);
        assertEquals(List.of(), drain(log, "d-a"), "no file yet: UCX has written nothing");
        append(file, table("d-a", "cma/memory") + table("d-b", "tcp/lo"));

        List<ReadPath> a = drain(log, "d-a");
        assertEquals(1, a.size());
        assertEquals("d-a", a.getFirst().agent());
        assertEquals(List.of("cma/memory"), a.getFirst().routes().getFirst().lanes());
        assertEquals(List.of(), drain(log, "d-a"), "once");
        assertEquals(List.of("tcp/lo"), drain(log, "d-b").getFirst().routes().getFirst().lanes(), "d-b's waited for it");
        assertEquals(4, flushes.get(), "every drain flushed UCX's stream first");
    }

    @Test
    void anAgentNameLongerThanUcxKeepsFindsItsTables() throws Exception {
        Path file = dir.resolve("ucx.log");
        UcxProtocolLog log = log(file);
        String agent = "prefill-engine-with-a-long-name-in-a-fleet-d0";
        append(file, table(agent.substring(0, UcxProtocolLog.WORKER_NAME_MAX), "cma/memory"));

        List<ReadPath> mine = drain(log, agent);
        assertEquals(1, mine.size());
        assertEquals(agent, mine.getFirst().agent(), "named after the agent in full");
    }

    @Test
    void theForwarderHandsUcxsLinesOnAndLeavesTablesToTheirAgents() throws Exception {
        Path file = dir.resolve("ucx.log");
        UcxProtocolLog log = log(file);
        append(file, "[1796623554.1] [vm:3207 :0]   ucp_context.c:2190 UCX  WARN  transport 'cuda_ipc' is not"
                + " available\n" + table("d-a", "cma/memory"));

        log.forward();
        assertEquals(1, messages.size());
        assertTrue(messages.getFirst().contains("transport 'cuda_ipc' is not available"), messages.getFirst());
        assertEquals(1, drain(log, "d-a").size(), "the table the forwarder read waited for d-a");
    }

    @Test
    void aHalfWrittenLineWaitsForItsEnd() throws Exception {
        Path file = dir.resolve("ucx.log");
        UcxProtocolLog log = log(file);
        String t = table("d-a", "cma/memory");
        append(file, t.substring(0, t.length() - 20));
        assertEquals(List.of(), drain(log, "d-a"));
        append(file, t.substring(t.length() - 20));
        assertEquals(1, drain(log, "d-a").size());
    }

    @Test
    void aFileUcxStartedAgainIsReadFromItsStart() throws Exception {
        Path file = dir.resolve("ucx.log");
        UcxProtocolLog log = log(file);
        append(file, table("d-a", "cma/memory") + table("d-a", "cma/memory"));
        assertEquals(2, drain(log, "d-a").size());
        Files.writeString(file, table("d-a", "tcp/lo")); // rotated: shorter than what was read

        assertEquals(List.of("tcp/lo"), drain(log, "d-a").getFirst().routes().getFirst().lanes());
    }

    @Test
    void withoutAReportNothingIsReadAndWhySays() {
        UcxProtocolLog none = UcxProtocolLog.none("the environment sets UCX_LOG_FILE=/x");
        assertEquals(List.of(), drain(none, "d-a"));
        assertEquals("the environment sets UCX_LOG_FILE=/x", none.unavailable());
    }
}
