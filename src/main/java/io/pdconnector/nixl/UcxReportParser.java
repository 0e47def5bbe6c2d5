package io.pdconnector.nixl;

import io.pdconnector.transfer.ReadPath;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads UCX's log stream as {@code UCX_PROTO_INFO} writes it: for each protocol selection, a table headed by the
 * worker (NIXL names it after its agent), how far the peer is and the endpoint configuration, then the operation,
 * then one row per message-size range with the protocol and its {@code transport/device} lanes. The READ tables
 * become {@link ReadPath}s; every other line is a UCX message, handed on as it is. Lines of several threads may
 * interleave; each carries its thread's number, so each thread's table is assembled apart. Fed whole lines, in
 * order, from one thread.
 */
final class UcxReportParser {

    /** {@code [seconds.micros] [host:pid:thread]  content}: UCX's compact log prefix. */
    private static final Pattern PREFIX = Pattern.compile("^\\[[^\\]]*\\] \\[[^\\]]*:(\\d+)\\]\\s+(.*)$");
    private static final Pattern SEPARATOR = Pattern.compile("^\\+[-+]+\\+$");
    private static final Pattern HEADER = Pattern.compile("^(\\S+) (\\S+) cfg#\\d+$");
    private static final Pattern READ = Pattern.compile("^remote memory read by \\S+ into (\\S+).* from (\\S+).*$");
    private static final Pattern LANE = Pattern.compile("([a-z][a-z0-9_]*)/([^\\s,()]+)");
    private static final Pattern RANGE = Pattern.compile("^(\\w+)(?:\\.\\.(\\w+))?$");

    private final Consumer<ReadPath> paths;
    private final Consumer<String> messages;
    private final Map<String, Table> open = new HashMap<>();

    UcxReportParser(Consumer<ReadPath> paths, Consumer<String> messages) {
        this.paths = paths;
        this.messages = messages;
    }

    void line(String raw) {
        Matcher m = PREFIX.matcher(raw.strip());
        if (!m.matches()) {
            if (!raw.isBlank()) {
                messages.accept(raw.strip());
            }
            return;
        }
        String thread = m.group(1);
        String content = m.group(2).strip();
        if (SEPARATOR.matcher(content).matches()) {
            Table t = open.get(thread);
            if (t != null && !t.routes.isEmpty()) {
                open.remove(thread);
                t.finish(paths);
            }
            return;
        }
        if (!content.startsWith("|") || !content.endsWith("|") || content.length() < 2) {
            messages.accept(content);
            return;
        }
        List<String> cells = cells(content);
        Matcher header = HEADER.matcher(cells.getFirst());
        if (cells.size() <= 2 && header.matches()) {
            Table t = new Table(header.group(1), header.group(2));
            open.put(thread, t);
            if (cells.size() == 2) {
                t.operation(cells.get(1));
            }
            return;
        }
        Table t = open.get(thread);
        if (t == null) {
            return;
        }
        if (cells.size() == 1 && t.operation == null) {
            t.operation(cells.getFirst());
        } else if (cells.size() == 3 && t.operation != null && !"Range".equals(cells.getFirst())) {
            t.route(cells.get(0), cells.get(1), cells.get(2));
        }
    }

    private static List<String> cells(String row) {
        List<String> out = new ArrayList<>();
        for (String c : row.substring(1, row.length() - 1).split("\\|", -1)) {
            out.add(c.strip());
        }
        return out;
    }

    /** A size as UCX prints it: decimal with an optional K, M, G or T suffix (powers of 1024), or {@code inf}. */
    static long size(String s) {
        if (s.equalsIgnoreCase("inf")) {
            return Long.MAX_VALUE;
        }
        char unit = Character.toUpperCase(s.charAt(s.length() - 1));
        int shift = switch (unit) {
            case 'K' -> 10;
            case 'M' -> 20;
            case 'G' -> 30;
            case 'T' -> 40;
            default -> 0;
        };
        long value = Long.parseLong(shift == 0 ? s : s.substring(0, s.length() - 1));
        return value << shift;
    }

    private static final class Table {
        final String worker;
        final String reach;
        String operation;
        String localMemory;
        String remoteMemory;
        final List<ReadPath.Route> routes = new ArrayList<>();

        Table(String worker, String reach) {
            this.worker = worker;
            this.reach = reach;
        }

        void operation(String text) {
            operation = text;
            Matcher m = READ.matcher(text);
            if (m.matches()) {
                localMemory = memory(m.group(1));
                remoteMemory = memory(m.group(2));
            }
        }

        private static String memory(String token) {
            int slash = token.indexOf('/');
            return slash < 0 ? token : token.substring(0, slash);
        }

        void route(String range, String description, String config) {
            Matcher r = RANGE.matcher(range);
            if (!r.matches()) {
                return;
            }
            long min = size(r.group(1));
            long max = r.group(2) == null ? min : size(r.group(2));
            List<String> lanes = new ArrayList<>();
            Matcher lane = LANE.matcher(config);
            while (lane.find()) {
                lanes.add(lane.group());
            }
            String protocol = description.startsWith("(?) ") ? description.substring(4) : description;
            routes.add(new ReadPath.Route(min, max, protocol, lanes));
        }

        void finish(Consumer<ReadPath> out) {
            if (localMemory != null) {
                out.accept(new ReadPath(worker, reach, localMemory, remoteMemory, routes));
            }
        }
    }
}
