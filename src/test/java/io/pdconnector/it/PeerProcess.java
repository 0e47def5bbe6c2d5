package io.pdconnector.it;

import io.pdconnector.nixl.NixlDefaults;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/** The parent's handle on a {@link NixlPeer} child: a line protocol, every answer awaited with a deadline. */
public final class PeerProcess implements AutoCloseable {

    private static final long ANSWER_TIMEOUT_S = 60;

    private final Process process;
    private final PrintWriter in;
    private final BlockingQueue<String> lines = new ArrayBlockingQueue<>(1024);
    public final String agentName;
    public final byte[] metadata;
    public final long kvAddress;
    public final long kvLength;
    public final long slotAddress;
    public final int slotCount;

    public PeerProcess(String name, long kvBytes, int slots) throws IOException {
        this(name, kvBytes, slots, null);
    }

    /** A peer whose KV region is the shared file {@code sharedKv} (null: anonymous memory). */
    public PeerProcess(String name, long kvBytes, int slots, Path sharedKv) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-Xmx256m",
                "-Dpd.nixl.home=" + System.getProperty("pd.nixl.home"),
                "-Dpd.nixl.progress-delay-us=" + Long.getLong("pd.nixl.progress-delay-us", NixlDefaults.PROGRESS_DELAY_US),
                "-cp", System.getProperty("java.class.path"), NixlPeer.class.getName(),
                name, Long.toString(kvBytes), Integer.toString(slots)));
        if (sharedKv != null) {
            cmd.add(sharedKv.toString());
        }
        process = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        in = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
        Thread reader = Thread.ofPlatform().daemon().name("peer-" + name).start(this::pump);
        reader.setUncaughtExceptionHandler((t, e) -> { });
        String[] ready = answer().split(" ");
        if (!ready[0].equals("READY")) {
            throw new IOException("peer " + name + " did not start: " + String.join(" ", ready));
        }
        agentName = ready[1];
        metadata = Base64.getDecoder().decode(ready[2]);
        kvAddress = Long.parseLong(ready[3]);
        kvLength = Long.parseLong(ready[4]);
        slotAddress = Long.parseLong(ready[5]);
        slotCount = Integer.parseInt(ready[6]);
    }

    private void pump() {
        try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(),
                StandardCharsets.UTF_8))) {
            for (String line; (line = out.readLine()) != null;) {
                if (!line.startsWith("[") && !line.isBlank()) { // skip stray library log lines
                    lines.put(line);
                }
            }
        } catch (IOException | InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    public String command(String line) throws IOException {
        in.println(line);
        return answer();
    }

    private String answer() throws IOException {
        try {
            String line = lines.poll(ANSWER_TIMEOUT_S, TimeUnit.SECONDS);
            if (line == null) {
                throw new IOException("peer gave no answer within " + ANSWER_TIMEOUT_S + " s (alive: "
                        + process.isAlive() + ")");
            }
            return line;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
    }

    /** Asks the peer to release everything and exit; returns the handles it still held (0 expected). */
    public int exit() throws IOException, InterruptedException {
        String bye = command("EXIT");
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            throw new IOException("peer did not exit");
        }
        return Integer.parseInt(bye.split(" ")[1]);
    }

    public void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            in.close();
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                kill();
            }
        }
    }
}
