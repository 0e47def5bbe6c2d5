package io.pdconnector.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.KeyStore;
import java.time.Duration;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.Test;

/**
 * Mutual TLS ({@link MutualTlsProfile}): the TLS handshake lets in only a client whose certificate the
 * server trusts, and then the bearer token decides the role, as without TLS.
 */
@QuarkusTest
@TestProfile(MutualTlsProfile.class)
class MutualTlsQuarkusTest {

    @TestHTTPResource(value = "/", tls = true)
    URL https;

    private HttpResponse<String> get(String keyStore, String path, String token) throws Exception {
        HttpRequest.Builder r = HttpRequest.newBuilder(URI.create(https.toString()).resolve(path))
                .timeout(Duration.ofSeconds(10));
        if (token != null) {
            r.header("Authorization", "Bearer " + token);
        }
        HttpClient client = HttpClient.newBuilder().sslContext(context(keyStore)).connectTimeout(Duration.ofSeconds(5))
                .build();
        return client.send(r.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** A client that trusts the server's certificate and presents {@code keyStore}'s, or none. */
    private static SSLContext context(String keyStore) throws Exception {
        TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(load("client-trust"));
        KeyManagerFactory keys = null;
        if (keyStore != null) {
            keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            keys.init(load(keyStore), MutualTlsProfile.PASSWORD.toCharArray());
        }
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(keys == null ? null : keys.getKeyManagers(), trust.getTrustManagers(), null);
        return ctx;
    }

    private static KeyStore load(String name) throws Exception {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (InputStream in = new FileInputStream(MutualTlsProfile.store(name))) {
            ks.load(in, MutualTlsProfile.PASSWORD.toCharArray());
        }
        return ks;
    }

    @Test
    void aClientWithATrustedCertificateGetsInAndItsTokenDecidesTheRole() throws Exception {
        assertEquals(200, get("client", "/v1/status", AuthOnProfile.OPERATOR).statusCode());
        assertEquals(401, get("client", "/v1/status", null).statusCode());
        HttpResponse<String> router = get("client", "/v1/status", AuthOnProfile.ROUTER);
        assertEquals(403, router.statusCode(), router.body());
    }

    @Test
    void aClientWithoutACertificateOrWithOneTheServerDoesNotTrustIsRefusedAtTheHandshake() {
        assertThrows(IOException.class, () -> get(null, "/v1/status", AuthOnProfile.OPERATOR), "no certificate");
        assertThrows(IOException.class, () -> get("stranger", "/v1/status", AuthOnProfile.OPERATOR), "untrusted");
        assertThrows(IOException.class, () -> get(null, "/q/health/live", null),
                "open endpoints too: the handshake comes before any path");
    }
}
