package io.pdconnector.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.transfer.ReadPath;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * UCX's protocol tables as UCX 1.23 (the pinned NIXL wheel's) writes them. The first case is a real capture: the
 * native self-test's two agents with {@code UCX_PROTO_INFO=y}, every operation's table, one of them a READ. The
 * others are laid out as {@code proto_debug.c} lays them out, with what a GPU node would print in them.
 */
class UcxReportParserTest {

    private final List<ReadPath> paths = new ArrayList<>();
    private final List<String> messages = new ArrayList<>();
    private final UcxReportParser parser = new UcxReportParser(paths::add, messages::add);

    @Test
    void ofEveryTableUcxPrintsOnlyTheReadBecomesAPath() throws IOException {
        try (InputStream in = getClass().getResourceAsStream("/ucx/nixl-selftest-proto-info.log")) {
            new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().forEach(parser::line);
        }

        assertEquals(List.of(new ReadPath("selftest-d", "intra-node", "host", "host",
                List.of(new ReadPath.Route(0, Long.MAX_VALUE, "zero-copy", List.of("cma/memory"))))), paths);
        assertEquals(List.of(), messages, "table lines are not messages");
    }

    @Test
    void sizesLanesAndSharesOfARouteAreRead() {
        table("0", "d-engine-d0 inter-node cfg#3",
                "remote memory read by ucp_get*(multi) into cuda/GPU0 from cuda/GPU1",
                "|     0..8K | (?) get via am      | tcp/eth0                                            |",
                "| 8193..inf | zero-copy           | 50% on rc_mlx5/mlx5_0:1 and 50% on rc_mlx5/mlx5_1:1 |");

        ReadPath path = paths.getFirst();
        assertEquals("inter-node", path.reach());
        assertEquals("cuda", path.localMemory());
        assertEquals("cuda", path.remoteMemory());
        assertEquals(new ReadPath.Route(0, 8192, "get via am", List.of("tcp/eth0")), path.routes().get(0));
        assertEquals(List.of("rc_mlx5/mlx5_0:1", "rc_mlx5/mlx5_1:1"), path.routes().get(1).lanes());
        assertEquals(Set.of("rc_mlx5"), path.transportsFrom(16 * 1024), "READs of 16 KiB never take the small route");
        assertEquals(Set.of("rc_mlx5", "tcp"), path.transportsFrom(4096));
    }

    @Test
    void tablesOfTwoThreadsInterleavedLineByLineAreEachWhole() {
        List<String> a = rows("0", "agent-a intra-node cfg#1",
                "remote memory read by ucp_get*(multi) into cuda/GPU0 from cuda", "| 0..inf | zero-copy | cuda_ipc/cuda |");
        List<String> b = rows("1", "agent-b intra-node cfg#1",
                "remote memory read by ucp_get* into host memory from host", "| 0..inf | zero-copy | cma/memory |");
        for (int i = 0; i < Math.max(a.size(), b.size()); i++) {
            if (i < a.size()) {
                parser.line(a.get(i));
            }
            if (i < b.size()) {
                parser.line(b.get(i));
            }
        }

        assertEquals(List.of("agent-a", "agent-b"), paths.stream().map(ReadPath::agent).toList());
        assertEquals(Set.of("cuda_ipc"), paths.get(0).transportsFrom(0));
        assertEquals(Set.of("cma"), paths.get(1).transportsFrom(0));
    }

    @Test
    void anOlderUcxsOneLineHeaderIsReadToo() {
        parser.line(line("0", "+------+----------+"));
        parser.line(line("0", "| d-x-d0 intra-node cfg#0 | remote memory read by ucp_get* into host memory from host |"));
        parser.line(line("0", "+------+----------+"));
        parser.line(line("0", "| 0..inf | zero-copy | posix/memory |"));
        parser.line(line("0", "+------+----------+"));

        assertEquals(Set.of("posix"), paths.getFirst().transportsFrom(0));
    }

    @Test
    void ucxsOwnMessagesAreHandedOnAndAreNoPath() {
        parser.line("[1796623554.1] [vm:3207 :0]   ucp_worker.c:1901 UCX  WARN  failed to open cuda_ipc/cuda");
        parser.line("plain text of a library that wrote to the file");

        assertEquals(0, paths.size());
        assertEquals(2, messages.size());
        assertTrue(messages.getFirst().contains("UCX  WARN  failed to open cuda_ipc/cuda"), messages.getFirst());
    }

    @Test
    void sizesAreUcxsMemoryUnits() {
        assertEquals(0, UcxReportParser.size("0"));
        assertEquals(8185, UcxReportParser.size("8185"));
        assertEquals(16 * 1024, UcxReportParser.size("16K"));
        assertEquals(2L << 20, UcxReportParser.size("2M"));
        assertEquals(Long.MAX_VALUE, UcxReportParser.size("inf"));
    }

    private void table(String thread, String header, String operation, String... routes) {
        rows(thread, header, operation, routes).forEach(parser::line);
    }

    private static List<String> rows(String thread, String header, String operation, String... routes) {
        List<String> out = new ArrayList<>();
        out.add(line(thread, "+--------+-------------+------------------+"));
        out.add(line(thread, "| " + header + " |"));
        out.add(line(thread, "| " + operation + " |"));
        out.add(line(thread, "+--------+-------------+------------------+"));
        out.add(line(thread, "| Range  | Description |      Config      |"));
        out.add(line(thread, "+--------+-------------+------------------+"));
        for (String r : routes) {
            out.add(line(thread, r));
        }
        out.add(line(thread, "+--------+-------------+------------------+"));
        return out;
    }

    private static String line(String thread, String content) {
        return "[1796623554.777662] [gpu-node:4242:" + thread + "]   " + content;
    }
}
