package io.pdconnector.router;

import io.pdconnector.controlplane.InstanceRecord;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;

/**
 * The router's only way out: HTTP/1.1 calls to instances the registry lists, at the address their
 * record gives (never one a request names), over one client whose connections are kept and reused.
 * Every call carries a deadline; the caller waits on the returned future with the same deadline.
 */
public final class FleetClient {

    static final String REQUEST_ID = "X-Request-Id";

    private final HttpClient http;
    private final Optional<String> authorization;

    /** {@code authorization}: the {@code Authorization} header every call carries (the router's token), if any. */
    public FleetClient(Duration connectTimeout, Optional<String> authorization) {
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(connectTimeout)
                .followRedirects(HttpClient.Redirect.NEVER).build();
        this.authorization = authorization;
    }

    /** POSTs a JSON body and reads the whole reply (a P leg: one JSON object). */
    public CompletableFuture<HttpResponse<byte[]>> post(InstanceRecord to, String path, String requestId, byte[] json,
            Duration timeout) {
        return http.sendAsync(jsonPost(to, path, requestId, json, timeout), HttpResponse.BodyHandlers.ofByteArray());
    }

    /** POSTs a JSON body; the future completes with the headers, the body then arrives through its publisher. */
    public CompletableFuture<HttpResponse<Flow.Publisher<List<ByteBuffer>>>> open(InstanceRecord to, String path,
            String requestId, byte[] json, Duration timeout) {
        return http.sendAsync(jsonPost(to, path, requestId, json, timeout), HttpResponse.BodyHandlers.ofPublisher());
    }

    public CompletableFuture<HttpResponse<byte[]>> get(InstanceRecord to, String path, Duration timeout) {
        return http.sendAsync(request(to, path, timeout).header("Accept", "application/json")
                .GET().build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    /** {@code DELETE /v1/producer/requests/{id}} on P: zero the lease slot and free the blocks now. */
    public CompletableFuture<HttpResponse<Void>> abort(InstanceRecord producer, String requestId, Duration timeout) {
        String id = URLEncoder.encode(requestId, StandardCharsets.UTF_8).replace("+", "%20");
        return http.sendAsync(request(producer, "/v1/producer/requests/" + id, timeout)
                .DELETE().build(), HttpResponse.BodyHandlers.discarding());
    }

    private HttpRequest.Builder request(InstanceRecord to, String path, Duration timeout) {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri(to, path)).timeout(timeout);
        authorization.ifPresent(a -> b.header("Authorization", a));
        return b;
    }

    private HttpRequest jsonPost(InstanceRecord to, String path, String requestId, byte[] json,
            Duration timeout) {
        return request(to, path, timeout)
                .header("Content-Type", "application/json").header(REQUEST_ID, requestId)
                .POST(HttpRequest.BodyPublishers.ofByteArray(json)).build();
    }

    static URI uri(InstanceRecord to, String path) {
        String host = to.host().contains(":") && !to.host().startsWith("[") ? "[" + to.host() + "]" : to.host();
        return URI.create("http://" + host + ":" + to.port() + path);
    }
}
