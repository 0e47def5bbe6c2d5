package io.pdconnector.controlplane;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.etcd.jetcd.common.exception.EtcdException;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.netty.GrpcSslContexts;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import java.io.File;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.net.ssl.SSLException;
import org.jboss.logging.Logger;

/**
 * Builds the one jetcd client of an {@link EtcdStore} (authentication, TLS, deadlines) and awaits its
 * futures. jetcd's defaults suit a program that would rather wait than fail; a registry must rather
 * fail fast and retry on its own schedule, so calls do not wait for a ready connection and every
 * unary call carries a deadline that etcd itself honours.
 */
final class EtcdClients {

    private static final Logger LOG = Logger.getLogger(EtcdClients.class);
    private static final long RETRY_DELAY_MILLIS = 100;
    private static final long RETRY_MAX_DELAY_MILLIS = 500;
    /** A get of the whole prefix answers every record at once (up to 1 MiB each); gRPC's default is 4 MiB. */
    private static final int MAX_ANSWER_BYTES = 64 << 20;

    private EtcdClients() {
    }

    /** The client; a missing or unreadable PEM file is an {@link IllegalArgumentException} here, not later. */
    static Client build(EtcdSettings s) {
        ClientBuilder b = Client.builder()
                .endpoints(s.endpoints().toArray(String[]::new))
                .waitForReady(false)
                .connectTimeout(s.callTimeout())
                .maxInboundMessageSize(MAX_ANSWER_BYTES)
                // jetcd retries safe calls itself, for no longer than a caller waits.
                .retryDelay(RETRY_DELAY_MILLIS)
                .retryMaxDelay(RETRY_MAX_DELAY_MILLIS)
                .retryMaxDuration(s.callTimeout())
                .interceptor(new UnaryDeadline(s.callTimeout()));
        if (s.user().isPresent()) {
            b.user(bytes(s.user().get())).password(bytes(s.password().orElse("")));
        }
        if (s.tls()) {
            b.sslContext(sslContext(s));
        }
        return b.build();
    }

    private static SslContext sslContext(EtcdSettings s) {
        SslContextBuilder tls = GrpcSslContexts.forClient();
        s.caFile().map(f -> readable(f, "pd.registry.etcd.ca-file")).ifPresent(tls::trustManager);
        if (s.certFile().isPresent()) {
            File cert = readable(s.certFile().get(), "pd.registry.etcd.cert-file");
            File key = readable(s.keyFile().orElseThrow(), "pd.registry.etcd.key-file");
            tls.keyManager(cert, key);
        }
        try {
            return tls.build();
        } catch (SSLException | IllegalArgumentException e) {
            throw new IllegalArgumentException("etcd TLS settings are unusable (the CA and certificate must be PEM, "
                    + "the key unencrypted PKCS#8 PEM): " + e.getMessage(), e);
        }
    }

    private static File readable(String path, String setting) {
        File f = new File(path);
        if (!Files.isReadable(f.toPath()) || !f.isFile()) {
            throw new IllegalArgumentException(setting + " " + path + " is not a readable file");
        }
        return f;
    }

    static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }

    /** The future's value within {@code timeout}; on a timeout it is cancelled, so jetcd stops retrying it. */
    static <T> T await(CompletableFuture<T> future, Duration timeout) throws EtcdCallException {
        try {
            return future.get(Math.max(1, timeout.toMillis()), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            future.cancel(true);
            throw new EtcdCallException("no answer within " + timeout.toMillis() + " ms", e);
        } catch (ExecutionException | CompletionException | CancellationException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            throw new EtcdCallException(describe(cause), cause);
        } catch (InterruptedException e) {
            future.cancel(true);
            Thread.currentThread().interrupt();
            throw new EtcdCallException("interrupted", e);
        }
    }

    /** A sentence an operator can act on: the error code and etcd's own words ("etcdserver: ..."), not a stack. */
    static String describe(Throwable t) {
        String code = t instanceof EtcdException e ? e.getErrorCode().name() : Status.fromThrowable(t).getCode().name();
        Set<String> parts = new LinkedHashSet<>();
        for (Throwable c = t; c != null && parts.size() < 3; c = c.getCause()) {
            String m = c.getMessage() == null ? null : c.getMessage().replaceFirst("^" + code + ": ", "");
            if (m != null && !m.isBlank() && parts.stream().noneMatch(p -> p.contains(m))) {
                parts.add(m);
            }
        }
        return code + " (" + (parts.isEmpty() ? t.getClass().getSimpleName() : String.join(": ", parts)) + ")";
    }

    static boolean leaseNotFound(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c.getMessage() != null && c.getMessage().contains("requested lease not found")) {
                return true;
            }
        }
        return false;
    }

    /**
     * Lets the client's connections to etcd retry now. gRPC backs off reconnecting to a node that refused
     * it, up to 2 minutes, so after a long outage it could stay away from an etcd that is back long after
     * our own backoff (at most pd.registry.etcd.max-backoff) tries again. jetcd does not expose its
     * channel; this reaches it by reflection and gives up quietly (false) where that is not allowed.
     */
    static boolean resetConnectBackoff(Client client) {
        try {
            Field manager = client.getClass().getDeclaredField("connectionManager");
            manager.setAccessible(true);
            Object connections = manager.get(client);
            Method channel = connections.getClass().getDeclaredMethod("getChannel");
            channel.setAccessible(true);
            ((ManagedChannel) channel.invoke(connections)).resetConnectBackoff();
            return true;
        } catch (ReflectiveOperationException | RuntimeException e) {
            LOG.debugf("cannot reset gRPC's reconnect backoff of the etcd client (%s); it reconnects on its own", e);
            return false;
        }
    }

    /** A failed or timed-out etcd call, with a sentence saying why. */
    static final class EtcdCallException extends Exception {
        EtcdCallException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * A deadline on every unary call, so that a call to a node that hangs ends at etcd too, not only in
     * our wait, and a write we gave up on does not linger. Streams (watch, keep-alive) have none.
     */
    private record UnaryDeadline(Duration timeout) implements ClientInterceptor {
        @Override
        public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
            if (method.getType() == MethodDescriptor.MethodType.UNARY && options.getDeadline() == null) {
                options = options.withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS);
            }
            return next.newCall(method, options);
        }
    }
}
