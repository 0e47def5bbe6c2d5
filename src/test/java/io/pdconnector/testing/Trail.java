package io.pdconnector.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A counterexample trail of the lease model ({@code model/trails/MUT_*.txt}, written by
 * {@code model/check.sh}): its header and its '@' events, parsed. An event this parser does not
 * know fails the parse, so a change of the model's vocabulary cannot silently empty a replay.
 */
public record Trail(String name, String configuration, String violated, List<Event> events) {

    /** The model's event kinds, by the text the model prints (see {@code model/lease.pml}). */
    public enum Kind {
        SCHEDULE("P schedule a(?<a>\\d) req=(?<req>\\d) att=\\d blk=\\d+ slot=(?<slot>\\d+) nonce=\\d+"),
        WRITE_SLOT("P(?<r>\\d) write slot of a(?<a>\\d)"),
        EXPORT("P export a(?<a>\\d)"),
        EXPIRE("P expire a(?<a>\\d)"),
        CLEAR_SLOT("P(?<r>\\d) clear slot of a(?<a>\\d), finished-sending"),
        LATE_ZERO("P(?<r>\\d) zero slot of a(?<a>\\d) \\(late\\)"),
        FREE("P free a(?<a>\\d) \\(blk \\d+, slot \\d+\\)"),
        SLOT_BACK_EARLY("P slot \\d+ of a(?<a>\\d) back to pool early"),
        HEARTBEAT("P heartbeat of a(?<a>\\d) req=(?<req>\\d) (extends a\\d|REVIVES a\\d|ignored|refused)"),
        FORGED_NOTIFICATION("P(?<r>\\d) forged notification req=(?<req>\\d)"
                + " (counted for a\\d, finished-sending|ignored)"),
        TICK("tick \\(now \\d+\\)"),
        NOTIFICATION_COUNTED("P(?<r>\\d) notification of a(?<a>\\d) counted for a(?<b>\\d), finished-sending"),
        NOTIFICATION_IGNORED("P(?<r>\\d) notification of a(?<a>\\d) ignored"),
        RESTART("P restart \\(epoch \\d+\\)"),
        ROUTER_AGAIN("router: request \\d again \\(a(?<a>\\d)\\)"),
        FLOOD("flood blk \\d"),
        PULL_START("D start a(?<a>\\d) dblk=\\d+ READ P blk \\d+"),
        READ_LANDS("D(?<r>\\d) READ a(?<a>\\d) lands: P blk \\d+ holds \\d+, into dblk \\d+"),
        SLOT_READ("D(?<r>\\d) slot READ a(?<a>\\d): slot \\d+ holds \\d+, want \\d+ -> (?<result>[123])"),
        DECIDE("D decide a(?<a>\\d) (?<outcome>RECEIVED|DECLINED \\w+)"),
        NOTIFY("D notify a(?<a>\\d) req=\\d nonce=\\d+"),
        NOTIFICATION_DUPLICATED("D notification of a(?<a>\\d) duplicated"),
        PULL_ENDS_EARLY("D abort a(?<a>\\d)"),
        QUARANTINE_ENDS("D quarantined dblk \\d+ of a(?<a>\\d) free: its READs ended"),
        DECODE_DONE("D decode of a(?<a>\\d) done, dblk \\d+ free"),
        // the engine path (CFG_GRANT): grants, the engine's steps, commits, early reads, reclaims
        GRANT("P grant g0 \\(blk \\d+, slot \\d+, nonce \\d+\\) and g1 \\(blk \\d+, no slot\\)"),
        GRANT_ANSWERED("P answer the grants: the engine holds g0 and g1"),
        ENGINE_BIND("E bind a(?<a>\\d) req=\\d to blk \\d+ \\(g(?<g>\\d)\\) and slot \\d+ \\(g0\\), nonce \\d+"),
        ENGINE_COPY("E copy a(?<a>\\d)'s KV into blk \\d+"),
        ENGINE_PAST_DEADLINE("E past its deadline for g(?<g>\\d): a(?<a>\\d) dropped"),
        ENGINE_PARAMS("E params of a(?<a>\\d) to D"),
        ENGINE_COMMIT_SENT("E commit a(?<a>\\d) sent"),
        ENGINE_DIES("E dies: the commit of a(?<a>\\d) never comes"),
        COMMIT("P commit a(?<a>\\d) (?<outcome>accepted|refused)(: exported \\(blk \\d+, slot \\d+, nonce \\d+\\))?"),
        GRANT_CLOSES("P grant g(?<g>\\d) closes \\(expired or returned\\)"),
        GRANT_BLOCKS_FREE_AT_CLOSE("P frees g(?<g>\\d)'s unbound blocks at its close"),
        PLACEHOLDER_FREE("P free the placeholder of g(?<g>\\d) \\(slot \\d+\\)"),
        RECLAIM("P reclaim g(?<g>\\d): its unbound blocks are free"),
        EARLY_KEPT("P(?<r>\\d) notification of a(?<a>\\d) kept early for the commit"),
        OTHER_ID_READ("P(?<r>\\d) read of request 1 with a0's nonce (kept early for the commit|ignored)"),
        EARLY_COUNTED("P(?<r>\\d) early read of (?<from>a0|request 1) counted for a0, finished-sending"),
        EARLY_NOT_COUNTED("P(?<r>\\d) early read of request 1 not counted for a0: it names another request");

        private final Pattern pattern;

        Kind(String regex) {
            this.pattern = Pattern.compile(regex);
        }
    }

    /** One event: its Spin step, the model process and the kind, with the numbers it names. */
    public record Event(int step, String process, Kind kind, Map<String, String> fields, String text) {

        /** The attempt: 0 = request 0 attempt 1, 1 = request 0 attempt 2, 2 = request 1 attempt 1. */
        public int attempt() {
            return number("a");
        }

        /** The P or D rank the event happens on. */
        public int rank() {
            return number("r");
        }

        public int number(String field) {
            String v = fields.get(field);
            if (v == null) {
                throw new IllegalStateException("event '" + text + "' has no " + field);
            }
            return Integer.parseInt(v);
        }

        public String word(String field) {
            return fields.get(field);
        }

        @Override
        public String toString() {
            return step + " " + process + " " + text;
        }
    }

    private static final Pattern EVENT = Pattern.compile("^\\s*(\\d+)\\s+(\\w+)\\s+(.+?)\\s*$");
    private static final Pattern CONFIGURATION = Pattern.compile("^# configuration: (\\w+)\\s+violated: (.+)$");

    public static Trail read(Path file) {
        try {
            return parse(file.getFileName().toString().replace(".txt", ""), Files.readAllLines(file));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static Trail parse(String name, List<String> lines) {
        String configuration = null;
        String violated = null;
        List<Event> events = new ArrayList<>();
        for (String line : lines) {
            Matcher header = CONFIGURATION.matcher(line);
            if (header.matches()) {
                configuration = header.group(1);
                violated = header.group(2);
            } else if (!line.startsWith("#") && !line.isBlank() && !isSpinMessage(line)) {
                events.add(event(name, line));
            }
        }
        if (configuration == null || events.isEmpty()) {
            throw new IllegalArgumentException(name + " is not a trail: no '# configuration:' header or no events");
        }
        return new Trail(name, configuration, violated, List.copyOf(events));
    }

    private static boolean isSpinMessage(String line) {
        String t = line.strip();
        return t.startsWith("spin:") || t.startsWith("----");
    }

    private static Event event(String trail, String line) {
        Matcher m = EVENT.matcher(line);
        if (!m.matches()) {
            throw new IllegalArgumentException(trail + ": not an event line: '" + line + "'");
        }
        String text = m.group(3);
        for (Kind kind : Kind.values()) {
            Matcher k = kind.pattern.matcher(text);
            if (k.matches()) {
                Map<String, String> fields = new HashMap<>();
                k.namedGroups().keySet().forEach(g -> fields.put(g, k.group(g)));
                return new Event(Integer.parseInt(m.group(1)), m.group(2), kind, Map.copyOf(fields), text);
            }
        }
        throw new IllegalArgumentException(trail + ": unknown model event '" + text + "'; teach Trail.Kind and"
                + " TrailReplay what it means");
    }

    /** The configuration's bounds that the Java replay copies. */
    public boolean scarce() {
        return configuration.equals("CFG_SCARCE");
    }

    /** The engine path: grants, an engine that commits after handing out params (1 slot, 1 D block). */
    public boolean granted() {
        return configuration.equals("CFG_GRANT");
    }

    /** The configuration with a clock (ticks) and a maximum lease lifetime. */
    public boolean timed() {
        return configuration.equals("CFG_LIFE");
    }
}
