package io.pdconnector.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A port for a service an IT starts, chosen below the kernel's ephemeral range. A port from that range
 * (what {@code new ServerSocket(0)} hands out) can be taken between the check and the service's bind by
 * any outgoing connection or NIXL listener on the host: one CI run lost a decoder's HTTP port that way
 * ("Port 36495 seems to be in use"). Below the range only an explicit bind can take it.
 */
public final class FreePort {

    private static final int TRIES = 200;
    /**
     * Every port this JVM handed out: a child may not have bound its port yet when the next is picked (a
     * service boots for seconds), so a free-looking port can already be promised to someone.
     */
    private static final Set<Integer> HANDED_OUT = ConcurrentHashMap.newKeySet();

    private FreePort() {
    }

    /**
     * A port nothing listens on now and this JVM never handed out before, in [low / 2, low) where low starts the
     * ephemeral range.
     */
    public static int pick() throws IOException {
        int low = ephemeralLow();
        int from = low / 2;
        for (int i = 0; i < TRIES; i++) {
            int port = ThreadLocalRandom.current().nextInt(from, low);
            if (!HANDED_OUT.add(port)) {
                continue; // promised to a process that may not listen yet: draw again
            }
            try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getByName("0.0.0.0"))) {
                return s.getLocalPort();
            } catch (IOException taken) {
                HANDED_OUT.remove(port); // someone listens there: draw again
            }
        }
        throw new IOException("no free port in [" + from + ", " + low + ") after " + TRIES + " tries");
    }

    private static int ephemeralLow() throws IOException {
        Path range = Path.of("/proc/sys/net/ipv4/ip_local_port_range");
        if (!Files.isReadable(range)) {
            return 32768; // Linux's default
        }
        // readAllLines, not readString: procfs reports a size of 0, which readString trusts on some JDKs
        List<String> lines = Files.readAllLines(range);
        int low = lines.isEmpty() ? 0 : Integer.parseInt(lines.getFirst().trim().split("\\s+")[0]);
        if (low < 2048) {
            throw new IOException("unexpected ephemeral port range in " + range + ": " + lines);
        }
        return low;
    }
}
