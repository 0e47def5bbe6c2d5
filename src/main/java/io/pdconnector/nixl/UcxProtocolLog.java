package io.pdconnector.nixl;

import io.pdconnector.transfer.ReadPath;
import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.jboss.logging.Logger;

/**
 * UCX's report of the protocol it selected for each kind of READ, read back from the log file this process gives
 * UCX. {@link NativeLoader} sets {@code UCX_PROTO_INFO} (READs only) and {@code UCX_LOG_FILE} before UCX loads,
 * unless the environment already sets either: then there is no report, and {@link #unavailable()} says why.
 *
 * <p>UCX prints a READ's table while the READ is posted, on the posting thread, once per endpoint configuration
 * and memory kinds; an agent posts only on its owner's thread, so what {@link #drain} returns for an agent right
 * after one of its posts came from that post. The file is UCX's buffered stream: each drain flushes it (libc's
 * {@code fflush(NULL)}: UCX exports its stream only through {@code ucs_log_flush}, which fsyncs) and reads what
 * is new. Every other line UCX writes there (its warnings and errors) is
 * logged here, so moving UCX's log to a file hides nothing: a daemon thread ({@link #startForwarding}) reads the
 * file every {@link #FORWARD_PERIOD} too, for processes and times in which no agent posts a READ (a producer). A
 * table it finds waits for its agent's next drain, which that agent's next post makes. The file and its folder go
 * with the process.
 */
final class UcxProtocolLog {

    private static final Logger LOG = Logger.getLogger(UcxProtocolLog.class);
    /**
     * UCX keeps a worker's name to 31 characters (UCP_ENTITY_NAME_MAX less its NUL). Agents whose names share
     * those only ever post on one thread, each post drained before the next, so the shortened name still finds
     * the agent whose post printed the table.
     */
    static final int WORKER_NAME_MAX = 31;
    /** Matched by UCX (fnmatch, case-blind) against each selection's operation: READs only. */
    static final String READ_TABLES = "remote memory read*";

    static final Duration FORWARD_PERIOD = Duration.ofSeconds(2);

    private final Path file;
    private final String unavailable;
    private final Supplier<MethodHandle> flushHandle;
    private final Map<String, List<ReadPath>> pending = new HashMap<>();
    private final UcxReportParser parser;
    private final StringBuilder partial = new StringBuilder();
    private MethodHandle flush;
    private FileChannel channel;
    private long offset;

    private UcxProtocolLog(Path file, String unavailable, Supplier<MethodHandle> flushHandle,
            Consumer<String> messages) {
        this.file = file;
        this.unavailable = unavailable;
        this.flushHandle = flushHandle;
        this.parser = new UcxReportParser(
                p -> pending.computeIfAbsent(p.agent(), a -> new ArrayList<>()).add(p), messages);
    }

    /**
     * A report read from {@code file}, flushed through {@code flushHandle} (looked up at the first read); UCX's own
     * lines go to {@code messages}.
     */
    static UcxProtocolLog at(Path file, Supplier<MethodHandle> flushHandle, Consumer<String> messages) {
        return new UcxProtocolLog(file, null, flushHandle, messages);
    }

    /** A report read from {@code file}, UCX's own lines logged at WARN as {@code UCX: ...}. */
    static UcxProtocolLog at(Path file, Supplier<MethodHandle> flushHandle) {
        return at(file, flushHandle, m -> LOG.warnf("UCX: %s", m));
    }

    /** No report: {@code reason} says why. */
    static UcxProtocolLog none(String reason) {
        return new UcxProtocolLog(null, reason, null, m -> { });
    }

    /** The daemon thread that forwards UCX's lines every {@link #FORWARD_PERIOD}; for the life of the process. */
    void startForwarding() {
        if (unavailable != null) {
            return;
        }
        Thread.ofPlatform().daemon().name("ucx-log").start(() -> {
            while (true) {
                try {
                    Thread.sleep(FORWARD_PERIOD);
                } catch (InterruptedException e) {
                    return;
                }
                forward();
            }
        });
    }

    /** Reads what is new: UCX's lines handed on now, its tables kept for their agents' drains. */
    synchronized void forward() {
        try {
            readNew();
        } catch (IOException | RuntimeException e) {
            LOG.debugf(e, "UCX's log at %s could not be read", file);
        }
    }

    /**
     * The name UCX's tables give {@code agent}'s worker: the agent's, kept to {@link #WORKER_NAME_MAX} characters.
     * An agent works it out once, as a drain follows each of its READ posts.
     */
    static String workerName(String agent) {
        return agent.length() > WORKER_NAME_MAX ? agent.substring(0, WORKER_NAME_MAX) : agent;
    }

    /** Null when UCX reports here; otherwise why it does not. */
    String unavailable() {
        return unavailable;
    }

    Path file() {
        return file;
    }

    /**
     * The READ paths UCX reported for {@code agent} since its last drain, oldest first, each named after the
     * agent in full; empty without a report. Tables of other agents found on the way are kept for their own
     * drains.
     */
    synchronized List<ReadPath> drain(String agent, String worker) {
        if (unavailable != null) {
            return List.of();
        }
        try {
            readNew();
        } catch (IOException | RuntimeException e) {
            LOG.debugf(e, "UCX's protocol report at %s could not be read", file);
        }
        List<ReadPath> mine = pending.remove(worker);
        if (mine == null) {
            return List.of();
        }
        return mine.stream().map(p -> new ReadPath(agent, p.reach(), p.localMemory(), p.remoteMemory(), p.routes()))
                .toList();
    }

    private void readNew() throws IOException {
        flushUcx();
        if (channel == null) {
            if (!Files.exists(file)) {
                return; // UCX opens it with its first line
            }
            channel = FileChannel.open(file, StandardOpenOption.READ);
        }
        long size = channel.size();
        if (size < offset) { // the file was started again (truncated)
            offset = 0;
            partial.setLength(0);
        }
        if (size == offset) {
            return;
        }
        ByteBuffer buffer = ByteBuffer.allocate((int) Math.min(size - offset, 1 << 20));
        while (buffer.hasRemaining()) {
            int n = channel.read(buffer, offset + buffer.position());
            if (n <= 0) {
                break;
            }
        }
        offset += buffer.position();
        partial.append(new String(buffer.array(), 0, buffer.position(), StandardCharsets.UTF_8));
        int start = 0;
        for (int nl = partial.indexOf("\n"); nl >= 0; nl = partial.indexOf("\n", start)) {
            parser.line(partial.substring(start, nl));
            start = nl + 1;
        }
        partial.delete(0, start);
    }

    private void flushUcx() {
        if (flush == null) {
            flush = flushHandle.get();
        }
        try {
            flush.invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException("fflush(NULL) failed", t);
        }
    }
}
