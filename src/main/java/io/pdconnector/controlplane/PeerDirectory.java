package io.pdconnector.controlplane;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.pdconnector.config.PdConfig;
import io.pdconnector.error.PeerFailureException;
import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.protocol.InvalidKvTransferParamsException;
import io.pdconnector.protocol.KvTransferParams;
import jakarta.enterprise.context.ApplicationScoped;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Makes a peer's handshake metadata available to D's step loop before a pull reaches it: looked up
 * in the embedded registry, else fetched from the peer's own {@code GET /v1/handshake} at the
 * {@code remote_host}/{@code remote_port} of its params (on the HTTP thread, with a deadline, so the
 * step loop never waits on the network). A peer whose pull failed at the transfer level is fetched
 * again next time: it may have restarted with new metadata.
 */
@ApplicationScoped
public class PeerDirectory {

    private static final TypeReference<List<HandshakeMetadata>> RANKS = new TypeReference<>() { };

    private final EmbeddedRegistry registry;
    private final ObjectMapper json;
    private final PdConfig config;
    private final HttpClient http;
    private final Set<String> stale = ConcurrentHashMap.newKeySet();

    public PeerDirectory(EmbeddedRegistry registry, ObjectMapper json, PdConfig config) {
        this.registry = registry;
        this.json = json;
        this.config = config;
        this.http = HttpClient.newBuilder().connectTimeout(config.http().handshakeTimeout()).build();
    }

    public void ensure(KvTransferParams params) {
        String engineId = params.remoteEngineId();
        boolean local = engineId.equals(config.engineId()) && config.role().producer();
        if (local || registry.lookup(engineId).isPresent() && !stale.contains(engineId)) {
            return;
        }
        if (params.remoteHost() == null || params.remotePort() < 1 || params.remotePort() > 65535) {
            throw new InvalidKvTransferParamsException("engine " + engineId
                    + " is not known here and remote_host/remote_port do not say where to find it");
        }
        List<HandshakeMetadata> ranks = fetch(params.remoteHost(), params.remotePort());
        if (ranks.isEmpty() || !ranks.getFirst().engineId().equals(engineId)) {
            throw new InvalidKvTransferParamsException("remote_engine_id is " + engineId + " but the instance at "
                    + params.remoteHost() + ":" + params.remotePort() + " is "
                    + (ranks.isEmpty() ? "no producer" : ranks.getFirst().engineId()));
        }
        registry.publish(engineId, ranks);
        stale.remove(engineId);
    }

    /** The next pull from this engine fetches its metadata again. */
    public void refresh(String engineId) {
        stale.add(engineId);
    }

    private List<HandshakeMetadata> fetch(String host, int port) {
        URI uri = URI.create("http://" + host + ":" + port + "/v1/handshake");
        try {
            HttpResponse<String> response = http.send(HttpRequest.newBuilder(uri)
                    .timeout(config.http().handshakeTimeout()).header("Accept", "application/json").build(),
                    HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() != 200) {
                throw new PeerFailureException("handshake with " + uri + " answered HTTP " + response.statusCode(), null);
            }
            return json.readValue(response.body(), RANKS);
        } catch (IOException e) {
            throw new PeerFailureException("handshake with " + uri + " failed: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new PeerFailureException("interrupted during the handshake with " + uri, e);
        }
    }
}
