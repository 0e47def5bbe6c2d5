package io.pdconnector.it;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Two network namespaces this test makes itself, "hosts" P and D on one machine: a veth pair between
 * them ({@code pdnf0} on each side, 10.201.0.1/30 and 10.201.0.2/30: the only link P and D share, the
 * one a test cuts or degrades) and one veth pair from this namespace into each (10.201.0.4/30 to P,
 * 10.201.0.8/30 to D: how the test itself calls the services). Every address is private and exists
 * only on these links; nothing is routed anywhere else. Needs root ({@code ip}, {@code tc}); a command
 * that fails throws with its output, never a silent skip.
 */
final class NamespacePair implements AutoCloseable {

    static final String LINK = "pdnf0";
    static final String P_ADDRESS = "10.201.0.1";
    static final String D_ADDRESS = "10.201.0.2";
    /** Where the test reaches P and D (their ends of the control links). */
    static final String P_CONTROL = "10.201.0.5";
    static final String D_CONTROL = "10.201.0.9";

    final String p;
    final String d;
    private final String tag;

    private NamespacePair(String tag) {
        this.tag = tag;
        this.p = "pdnf-p-" + tag;
        this.d = "pdnf-d-" + tag;
    }

    /** Makes both namespaces and the three links; on any failure removes what it made and throws. */
    static NamespacePair create(String tag) {
        NamespacePair pair = new NamespacePair(tag);
        try {
            pair.build();
        } catch (RuntimeException e) {
            pair.close();
            throw e;
        }
        return pair;
    }

    private void build() {
        run("ip", "netns", "add", p);
        run("ip", "netns", "add", d);
        run("ip", "link", "add", "pdnfa" + tag, "type", "veth", "peer", "name", "pdnfb" + tag);
        run("ip", "link", "set", "pdnfa" + tag, "netns", p, "name", LINK);
        run("ip", "link", "set", "pdnfb" + tag, "netns", d, "name", LINK);
        run("ip", "-n", p, "addr", "add", P_ADDRESS + "/30", "dev", LINK);
        run("ip", "-n", d, "addr", "add", D_ADDRESS + "/30", "dev", LINK);
        control(p, "pdcp" + tag, "10.201.0.6", P_CONTROL);
        control(d, "pdcd" + tag, "10.201.0.10", D_CONTROL);
        for (String ns : List.of(p, d)) {
            run("ip", "-n", ns, "link", "set", "lo", "up");
            run("ip", "-n", ns, "link", "set", LINK, "up");
        }
    }

    /** A veth from this namespace ({@code outside}, address {@code here}) into {@code ns} ({@code there}). */
    private void control(String ns, String outside, String here, String there) {
        run("ip", "link", "add", outside, "type", "veth", "peer", "name", outside + "x");
        run("ip", "link", "set", outside + "x", "netns", ns, "name", "pdctl0");
        run("ip", "addr", "add", here + "/30", "dev", outside);
        run("ip", "-n", ns, "addr", "add", there + "/30", "dev", "pdctl0");
        run("ip", "link", "set", outside, "up");
        run("ip", "-n", ns, "link", "set", "pdctl0", "up");
    }

    /** Bytes D has received over the P-D link so far. */
    long bytesIntoD() {
        return Long.parseLong(run("ip", "netns", "exec", d, "cat", "/sys/class/net/" + LINK + "/statistics/rx_bytes"));
    }

    /** Cuts the P-D link (D's end down): nothing passes between them until {@link #restore}. */
    void cut() {
        run("ip", "-n", d, "link", "set", LINK, "down");
    }

    void restore() {
        run("ip", "-n", d, "link", "set", LINK, "up");
    }

    /**
     * Degrades the P-D link on both ends: {@code tc netem} delay and loss where the kernel has netem;
     * a kernel without it (the development VM's) gets a token-bucket rate limit ({@code tc tbf}: queueing
     * delay under load) and random drops ({@code nft numgen random}) instead, and says so. Returns what
     * was applied, for the test's report.
     */
    String degrade(int delayMs, int lossPercent, String fallbackRate) {
        Result netem = exec(List.of("tc", "-n", p, "qdisc", "replace", "dev", LINK, "root", "netem", "delay",
                delayMs + "ms", "loss", lossPercent + "%"));
        if (netem.code == 0) {
            run("tc", "-n", d, "qdisc", "replace", "dev", LINK, "root", "netem", "delay", delayMs + "ms", "loss",
                    lossPercent + "%");
            return "netem delay " + delayMs + " ms, loss " + lossPercent + "% on both ends";
        }
        if (!netem.output.contains("unknown")) {
            throw new AssertionError("tc netem failed: " + netem.output);
        }
        for (String ns : List.of(p, d)) {
            run("tc", "-n", ns, "qdisc", "replace", "dev", LINK, "root", "tbf", "rate", fallbackRate, "burst",
                    "32kbit", "latency", "400ms");
            run("ip", "netns", "exec", ns, "nft", "add", "table", "inet", "pdnf");
            run("ip", "netns", "exec", ns, "nft", "add", "chain", "inet", "pdnf", "out",
                    "{ type filter hook output priority 0; }");
            run("ip", "netns", "exec", ns, "nft", "add", "rule", "inet", "pdnf", "out", "oifname", LINK, "numgen",
                    "random", "mod", "100", "<", Integer.toString(lossPercent), "drop");
        }
        String what = "NO NETEM in this kernel (" + netem.output + "): tbf rate " + fallbackRate
                + " and nftables random drop " + lossPercent + "% on both ends instead";
        System.out.println("NamespacePair: " + what);
        return what;
    }

    void heal() {
        for (String ns : List.of(p, d)) {
            exec(List.of("tc", "-n", ns, "qdisc", "del", "dev", LINK, "root"));
            exec(List.of("ip", "netns", "exec", ns, "nft", "delete", "table", "inet", "pdnf"));
        }
    }

    /** Removes both namespaces (and with them every link they hold); tolerant, so it may run after a failure. */
    @Override
    public void close() {
        for (String ns : List.of(p, d)) {
            exec(List.of("ip", "netns", "del", ns));
        }
        for (String left : List.of("pdnfa" + tag, "pdcp" + tag, "pdcd" + tag)) {
            exec(List.of("ip", "link", "del", left)); // only if a failure left it here
        }
    }

    static String run(String... command) {
        Result r = exec(List.of(command));
        if (r.code != 0) {
            throw new AssertionError("`" + String.join(" ", command) + "` failed (" + r.code + "): " + r.output
                    + " - network fault tests need root, iproute2 and tc (sch_netem)");
        }
        return r.output;
    }

    private record Result(int code, String output) {
    }

    private static Result exec(List<String> command) {
        try {
            Process proc = new ProcessBuilder(new ArrayList<>(command)).redirectErrorStream(true).start();
            if (!proc.waitFor(20, TimeUnit.SECONDS)) {
                proc.destroyForcibly();
                return new Result(-1, "timed out after 20 s");
            }
            return new Result(proc.exitValue(), new String(proc.getInputStream().readAllBytes(),
                    StandardCharsets.UTF_8).strip());
        } catch (IOException e) {
            return new Result(-1, e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Result(-1, e.toString());
        }
    }
}
