package io.pdconnector.it;

import io.pdconnector.nixl.NixlDefaults;
import io.pdconnector.nixl.NixlHome;
import io.pdconnector.nixl.NixlTransferEngine;
import io.pdconnector.testing.SeededBytes;
import io.pdconnector.transfer.RegisteredRegion;
import io.pdconnector.transfer.TransferAgent;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

/**
 * The exporting side (P) of the two-process tests and benchmark, as its own OS process: it registers
 * a KV region and a lease-slot array with real NIXL, prints its metadata, then obeys one command a
 * line on stdin and answers one line on stdout. It exits on EOF, so it never outlives its parent.
 */
public final class NixlPeer {

    private NixlPeer() {
    }

    public static void main(String[] args) throws Exception {
        String name = args[0];
        long kvBytes = Long.parseLong(args[1]);
        int slots = Integer.parseInt(args[2]);
        NixlTransferEngine engine = NixlTransferEngine.open(NixlHome.at(Path.of(System.getProperty("pd.nixl.home"))),
                true, Long.getLong("pd.nixl.progress-delay-us", NixlDefaults.PROGRESS_DELAY_US));
        TransferAgent agent = engine.createAgent(name);
        // a fourth argument names a file: the KV region is then shared memory a local engine can map
        RegisteredRegion kv = args.length > 3 ? agent.allocateShared("kv", Path.of(args[3]), kvBytes)
                : agent.allocate("kv", kvBytes);
        RegisteredRegion slotArray = agent.allocate("slots", 8L * slots);
        List<String> notifications = new ArrayList<>();
        List<RegisteredRegion> later = new ArrayList<>();
        var out = System.out;
        out.printf("READY %s %s %d %d %d %d%n", name, Base64.getEncoder().encodeToString(agent.localMetadata()),
                kv.address(), kv.length(), slotArray.address(), slots);
        out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null;) {
            String[] cmd = line.trim().split(" ");
            switch (cmd[0]) {
                case "FILL" -> {
                    SeededBytes.fill(kv.segment(), Long.parseLong(cmd[1]));
                    out.println("OK");
                }
                case "SLOTS" -> {
                    long first = Long.parseLong(cmd[1]);
                    for (int i = 0; i < slots; i++) {
                        slotArray.segment().setAtIndex(ValueLayout.JAVA_LONG, i, first + i);
                    }
                    out.println("OK");
                }
                case "NOTIFS" -> {
                    agent.drainNotifications((from, msg) ->
                            notifications.add(from + "=" + new String(msg, StandardCharsets.UTF_8)));
                    out.println("NOTIFS " + String.join(" ", notifications));
                    notifications.clear();
                }
                case "DEREGISTER" -> {
                    agent.deregister(kv);
                    out.println("OK");
                }
                case "REUSE" -> { // what a process does next with the memory it just gave back
                    RegisteredRegion next = agent.allocate("kv-next", kvBytes);
                    SeededBytes.fill(next.segment(), Long.parseLong(cmd[1]));
                    later.add(next);
                    out.println("OK " + next.address());
                }
                case "EXIT" -> {
                    if (kv.segment().scope().isAlive()) {
                        agent.deregister(kv);
                    }
                    agent.deregister(slotArray);
                    later.forEach(agent::deregister);
                    out.println("BYE " + agent.openHandles());
                    out.flush();
                    agent.close();
                    return;
                }
                default -> out.println("ERROR unknown command " + cmd[0]);
            }
            out.flush();
        }
        System.exit(3); // parent went away without EXIT
    }
}
