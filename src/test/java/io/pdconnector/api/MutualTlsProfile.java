package io.pdconnector.api;

import io.quarkus.test.junit.QuarkusTestProfile;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Auth on as in {@link AuthOnProfile}, served over HTTPS only, with client certificates required
 * (pd.auth.mtls). The certificates are made here with the JDK's keytool, fresh each run: the server's,
 * a client's that the server's trust store holds, and a stranger's that it does not.
 */
public class MutualTlsProfile implements QuarkusTestProfile {

    static final Path DIR = Path.of("target", "mtls-test");
    static final String PASSWORD = "test-store-secret";

    @Override
    public Map<String, String> getConfigOverrides() {
        makeCertificates();
        Map<String, String> m = new HashMap<>(new AuthOnProfile().getConfigOverrides());
        m.put("pd.auth.mtls", "true");
        m.put("quarkus.tls.key-store.p12.path", DIR.resolve("server.p12").toAbsolutePath().toString());
        m.put("quarkus.tls.key-store.p12.password", PASSWORD);
        m.put("quarkus.tls.trust-store.p12.path", DIR.resolve("server-trust.p12").toAbsolutePath().toString());
        m.put("quarkus.tls.trust-store.p12.password", PASSWORD);
        m.put("quarkus.http.insecure-requests", "disabled");
        m.put("quarkus.http.test-ssl-port", "0");
        return m;
    }

    private static void makeCertificates() {
        try {
            if (Files.isDirectory(DIR)) {
                try (var files = Files.list(DIR)) {
                    for (Path f : files.toList()) {
                        Files.delete(f);
                    }
                }
            }
            Files.createDirectories(DIR);
            for (String name : List.of("server", "client", "stranger")) {
                keytool("-genkeypair", "-alias", name, "-keyalg", "EC", "-groupname", "secp256r1", "-validity", "2",
                        "-dname", "CN=" + name, "-ext", "SAN=dns:localhost,ip:127.0.0.1", "-storetype", "PKCS12",
                        "-keystore", store(name), "-storepass", PASSWORD);
                keytool("-exportcert", "-rfc", "-alias", name, "-keystore", store(name), "-storepass", PASSWORD,
                        "-file", DIR.resolve(name + ".crt").toString());
            }
            keytool("-importcert", "-noprompt", "-alias", "client", "-file", DIR.resolve("client.crt").toString(),
                    "-storetype", "PKCS12", "-keystore", store("server-trust"), "-storepass", PASSWORD);
            keytool("-importcert", "-noprompt", "-alias", "server", "-file", DIR.resolve("server.crt").toString(),
                    "-storetype", "PKCS12", "-keystore", store("client-trust"), "-storepass", PASSWORD);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static String store(String name) {
        return DIR.resolve(name + ".p12").toString();
    }

    private static void keytool(String... args) throws IOException {
        List<String> cmd = new java.util.ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try {
            String out = new String(p.getInputStream().readAllBytes());
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IOException("keytool " + String.join(" ", args) + " failed: " + out);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }
}
