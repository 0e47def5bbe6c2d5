package io.pdconnector.api.engine;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.pdconnector.api.problem.Problem;
import io.pdconnector.config.PdConfig;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import io.quarkus.runtime.annotations.RegisterForReflection;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.interceptor.Interceptor;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.jboss.logging.Logger;

/**
 * The engine socket (pd.kv.engine-socket): a Unix domain socket in pd.kv.shm-dir, beside the KV files the
 * engine maps, where the engine's plugin sends P's per-step batch and D's pulls and releases without HTTP's cost
 * per call. One acceptor thread;
 * each connection is served by a thread of its own, one request at a time ({@link EngineSocketCalls}; op pulls,
 * one frame per pull, {@link EngineSocketPulls}).
 * The socket is as private as the KV files: mode 0660, and with pd.auth on a connection first says hello with
 * the engine's token. The file is this instance's from start to shutdown, which removes it.
 */
@ApplicationScoped
public class EngineSocketServer {

    private static final Logger LOG = Logger.getLogger(EngineSocketServer.class);
    /** Far above what an engine opens (one per TP worker's load thread); beyond it a connection is refused. */
    static final int MAX_CONNECTIONS = 256;

    private final PdConfig config;
    private final EngineSocketCalls calls;
    private final EngineSocketPulls pulls;
    private final ObjectMapper json;
    private final int maxFrame;
    private final Set<SocketChannel> connections = ConcurrentHashMap.newKeySet();
    private final AtomicLong accepted = new AtomicLong();
    private final MeterRegistry meters;
    /** One counter per (op, status): as few as the ops and their answers. */
    private final ConcurrentHashMap<String, Counter> requests = new ConcurrentHashMap<>();
    private volatile ServerSocketChannel server;
    private volatile Path path;

    EngineSocketServer(PdConfig config, EngineSocketCalls calls, EngineSocketPulls pulls, ObjectMapper json,
            MeterRegistry meters) {
        this.config = config;
        this.calls = calls;
        this.pulls = pulls;
        this.json = json;
        this.meters = meters;
        this.maxFrame = (int) Math.min(Integer.MAX_VALUE, config.http().maxJsonBody().asLongValue());
    }

    /** Where the socket is while this instance serves it; empty when it serves none. */
    public Optional<Path> path() {
        return Optional.ofNullable(path);
    }

    /** The socket's path for this configuration: a producer or decoder with pd.kv.engine-socket on has one. */
    static Optional<Path> configuredPath(PdConfig config) {
        if (!(config.role().consumer() || config.role().producer()) || !config.kv().engineSocket()) {
            return Optional.empty();
        }
        return Optional.of(Path.of(config.kv().shmDir()).toAbsolutePath().resolve("pd-" + config.engineId() + ".sock"));
    }

    /** After the runtime's own start (its default priority), so the first request finds the consumer loop running. */
    void start(@Observes @Priority(Interceptor.Priority.APPLICATION + 600) StartupEvent event) {
        Optional<Path> at = configuredPath(config);
        if (at.isEmpty()) {
            return;
        }
        try {
            server = bind(at.get());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot serve the engine socket at " + at.get()
                    + " (pd.kv.engine-socket; turn it off or shorten pd.kv.shm-dir or pd.engine-id)", e);
        }
        path = at.get();
        Thread.ofPlatform().name("pd-engine-socket").daemon().start(this::acceptLoop);
        LOG.infof("engine socket at %s (the engine plugin's calls%s)", path,
                calls.helloRequired() ? "; a connection says hello with the engine token first" : "");
    }

    /** Binds, taking over a socket file a previous run of this instance left, never one another instance serves. */
    private static ServerSocketChannel bind(Path at) throws IOException {
        Files.createDirectories(at.getParent());
        if (Files.exists(at, LinkOption.NOFOLLOW_LINKS)) {
            if (!Files.readAttributes(at, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).isOther()) {
                throw new IOException(at + " exists and is not a socket: not removed");
            }
            if (listening(at)) {
                throw new IOException("another process serves " + at + " (a second pd-connector with this"
                        + " pd.engine-id and pd.kv.shm-dir?)");
            }
            Files.delete(at); // nobody listens: left by a run that did not shut down
        }
        ServerSocketChannel channel = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        try {
            channel.bind(UnixDomainSocketAddress.of(at));
            Files.setPosixFilePermissions(at, PosixFilePermissions.fromString("rw-rw----"));
            return channel;
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    private static boolean listening(Path at) {
        try (SocketChannel probe = SocketChannel.open(UnixDomainSocketAddress.of(at))) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private void acceptLoop() {
        ServerSocketChannel listening = server;
        while (listening.isOpen()) {
            SocketChannel connection;
            try {
                connection = listening.accept();
            } catch (ClosedChannelException closed) {
                return;
            } catch (IOException e) {
                LOG.warnf("engine socket: accept failed: %s", e.getMessage());
                continue;
            }
            if (connections.size() >= MAX_CONNECTIONS) {
                LOG.warnf("engine socket: refusing a connection, %d are open already", connections.size());
                closeQuietly(connection);
                continue;
            }
            connections.add(connection);
            // a platform thread: its blocking read wakes it directly, where a virtual thread waits for the
            // poller thread and then for a carrier (two more hand-offs per request on a busy 2-core host)
            Thread.ofPlatform().daemon().name("pd-engine-conn-" + accepted.incrementAndGet())
                    .start(() -> serve(connection));
        }
    }

    private void serve(SocketChannel connection) {
        boolean authenticated = !calls.helloRequired();
        try (connection) {
            for (byte[] frame; (frame = EngineSocketFrames.read(connection, maxFrame)) != null;) {
                EngineSocketCalls.Reply reply;
                JsonNode request = parse(frame);
                if (request == null) {
                    reply = EngineSocketCalls.Reply.of(Problem.of(400, "malformed-request", "Bad Request",
                            "an engine socket frame holds one JSON object"), true);
                } else if (!authenticated) {
                    reply = calls.authenticate(request);
                    authenticated = reply.status() == 200;
                } else if (EngineSocketOp.of(request).orElse(null) == EngineSocketOp.PULLS) {
                    pulls.pulls(request, (index, itemReply) -> send(connection, request, index, itemReply));
                    continue;
                } else {
                    reply = calls.handle(request);
                }
                send(connection, request, null, reply);
                if (reply.close()) {
                    return;
                }
            }
        } catch (EngineSocketFrames.BadFrame e) {
            LOG.warnf("engine socket: closing a connection: %s", e.getMessage());
        } catch (IOException e) {
            LOG.debugf("engine socket: connection ended: %s", e.getMessage());
        } finally {
            connections.remove(connection);
        }
    }

    private void send(SocketChannel connection, JsonNode request, Integer index, EngineSocketCalls.Reply reply)
            throws IOException {
        if (reply.body() instanceof EngineSocketPulls.ReleaseResults released) {
            released.results().forEach(result -> count(request, result.status()));
        } else {
            count(request, reply.status());
        }
        EngineSocketFrames.write(connection, json.writeValueAsBytes(new ReplyFrame(reply.status(), index,
                reply.body())));
    }

    /**
     * {@code pd_engine_socket_requests_total{op, status}}: what HTTP's server metrics would have counted; each
     * pull of op pulls and each release of op releases counts as one, with its own status.
     */
    private void count(JsonNode request, int replyStatus) {
        String op = request == null ? "none" : EngineSocketOp.of(request).map(EngineSocketOp::wire).orElse("other");
        String status = Integer.toString(replyStatus);
        requests.computeIfAbsent(op + ' ' + status, k -> Counter.builder("pd_engine_socket_requests")
                .description("Requests on D's engine socket, by op and the status answered")
                .tag("op", op).tag("status", status).register(meters)).increment();
    }

    private JsonNode parse(byte[] frame) {
        try {
            JsonNode node = json.readTree(frame);
            return node != null && node.isObject() ? node : null;
        } catch (IOException e) {
            return null;
        }
    }

    /** The reply frame's JSON, written in one pass (no tree of the body first); an index only in op pulls. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    @RegisterForReflection
    record ReplyFrame(int status, Integer index, Object body) {
    }

    void stop(@Observes ShutdownEvent event) {
        ServerSocketChannel listening = server;
        if (listening == null) {
            return;
        }
        closeQuietly(listening);
        connections.forEach(EngineSocketServer::closeQuietly);
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            LOG.warnf("engine socket: could not remove %s: %s", path, e.getMessage());
        }
        path = null;
    }

    private static void closeQuietly(java.nio.channels.Channel channel) {
        try {
            channel.close();
        } catch (IOException ignored) {
            // closing: nothing more to do with it
        }
    }
}
