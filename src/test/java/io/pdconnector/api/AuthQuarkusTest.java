package io.pdconnector.api;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.pdconnector.api.problem.Problem;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import io.restassured.response.Response;
import io.restassured.specification.RequestSpecification;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Auth on ({@link AuthOnProfile}). The operations come from the service's own OpenAPI document, so an
 * endpoint added later is walked too, and must be in {@link #ROLES} (docs/security.md's "Roles" table) or this test
 * fails: none can slip through unprotected or unreviewed.
 */
@QuarkusTest
@TestProfile(AuthOnProfile.class)
class AuthQuarkusTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String PROBE_ID = "auth-probe";

    /** Every operation and the roles it allows: docs/security.md's "Roles" table. */
    static final Map<String, Set<String>> ROLES = Map.ofEntries(
            Map.entry("POST /v1/producer/prefill", Set.of("router")),
            Map.entry("POST /v1/consumer/pull", Set.of("router", "engine")),
            Map.entry("POST /v1/completions", Set.of("router")),
            Map.entry("POST /v1/chat/completions", Set.of("router")),
            Map.entry("GET /v1/models", Set.of("router")),
            Map.entry("POST /v1/route", Set.of("router")),
            Map.entry("POST /v1/producer/requests", Set.of("engine")),
            Map.entry("POST /v1/producer/batch", Set.of("engine")),
            Map.entry("PUT /v1/producer/requests/{id}/kv", Set.of("engine")),
            Map.entry("POST /v1/producer/requests/{id}/finish", Set.of("engine")),
            Map.entry("GET /v1/consumer/requests/{id}/kv", Set.of("engine")),
            Map.entry("GET /v1/producer/requests/{id}", Set.of("engine", "operator")),
            Map.entry("GET /v1/consumer/requests/{id}", Set.of("engine", "operator")),
            Map.entry("DELETE /v1/producer/requests/{id}", Set.of("operator", "router", "engine")),
            Map.entry("DELETE /v1/consumer/requests/{id}", Set.of("operator", "router", "engine")),
            Map.entry("GET /v1/handshake", Set.of("peer", "operator")),
            Map.entry("GET /v1/registry/self", Set.of("peer", "operator")),
            Map.entry("GET /v1/registry", Set.of("operator", "peer")),
            Map.entry("GET /v1/status", Set.of("operator")),
            Map.entry("GET /v1/kv-layout", Set.of("engine", "operator")));

    /** One token per role, each configured for that role only. */
    private static final Map<String, String> TOKENS = Map.of("router", AuthOnProfile.ROUTER, "engine",
            AuthOnProfile.ENGINE, "peer", AuthOnProfile.PEER, "operator", AuthOnProfile.OPERATOR);

    /** Credentials that identify no one: none, a token nobody has, other schemes, a bare scheme. */
    private static final List<String> NOT_CREDENTIALS = java.util.Arrays.asList(null, "Bearer not-a-token-0123456789abcdef",
            "Bearer " + AuthOnProfile.ROUTER + "x", "Basic cm91dGVyOnJvdXRlcg==", "Bearer", "Bearer a b",
            AuthOnProfile.OPERATOR);

    private record Operation(String method, String path, String contentType) {

        String key() {
            return method + " " + path;
        }

        String url() {
            return path.replaceAll("\\{[^}]+}", PROBE_ID);
        }

        Response send(String authorization) {
            RequestSpecification r = given();
            if (authorization != null) {
                r = r.header("Authorization", authorization);
            }
            if (contentType != null) {
                r = r.contentType(contentType).body(contentType.contains("json") ? "{}".getBytes() : new byte[0]);
            }
            return r.request(method, url());
        }
    }

    private static List<Operation> operations() throws Exception {
        Response doc = given().queryParam("format", "json").get("/q/openapi"); // open: no credential
        assertEquals(200, doc.statusCode());
        JsonNode paths = JSON.readTree(doc.asString()).path("paths");
        List<Operation> ops = new ArrayList<>();
        for (Map.Entry<String, JsonNode> path : paths.properties()) {
            for (Map.Entry<String, JsonNode> method : path.getValue().properties()) {
                if (!Set.of("get", "put", "post", "delete", "patch", "head", "options").contains(method.getKey())) {
                    continue;
                }
                Iterator<String> types = method.getValue().path("requestBody").path("content").fieldNames();
                ops.add(new Operation(method.getKey().toUpperCase(java.util.Locale.ROOT), path.getKey(),
                        types.hasNext() ? types.next() : null));
            }
        }
        return ops;
    }

    @Test
    void theDocumentListsExactlyTheOperationsOfTheTable() throws Exception {
        Set<String> documented = new TreeSet<>();
        operations().forEach(o -> documented.add(o.key()));
        assertEquals(new TreeSet<>(ROLES.keySet()), documented,
                "every operation of the OpenAPI document needs its roles in docs/security.md's Roles table (and in ROLES)");
    }

    @Test
    void everyOperationRefusesAMissingAWrongAndAMalformedCredentialWith401() throws Exception {
        List<String> failures = new ArrayList<>();
        for (Operation op : operations()) {
            for (String credential : NOT_CREDENTIALS) {
                Response r = op.send(credential);
                String problem = problemReason(r);
                boolean ok = r.statusCode() == 401 && "unauthenticated".equals(problem)
                        && r.header("WWW-Authenticate") != null && r.header("WWW-Authenticate").startsWith("Bearer ")
                        && r.contentType().startsWith(Problem.MEDIA_TYPE) && !r.jsonPath().getString("detail").isBlank();
                if (!ok) {
                    failures.add(op.key() + " with " + credential + ": " + r.statusCode() + " " + r.asString());
                }
            }
        }
        assertTrue(failures.isEmpty(), failures.size() + " answers were not a 401 problem:\n" + String.join("\n", failures));
    }

    @Test
    void eachRoleReachesItsOwnOperationsOnlyAndOthersGet403() throws Exception {
        List<String> failures = new ArrayList<>();
        int reached = 0;
        for (Operation op : operations()) {
            Set<String> allowed = ROLES.getOrDefault(op.key(), Set.of());
            for (Map.Entry<String, String> role : TOKENS.entrySet()) {
                Response r = op.send("Bearer " + role.getValue());
                if (allowed.contains(role.getKey())) {
                    reached++;
                    if (r.statusCode() == 401 || r.statusCode() == 403) {
                        failures.add(role.getKey() + " refused at " + op.key() + ": " + r.asString());
                    }
                } else if (r.statusCode() != 403 || !"forbidden".equals(problemReason(r))) {
                    failures.add(role.getKey() + " at " + op.key() + " (for " + allowed + "): " + r.statusCode() + " "
                            + r.asString());
                }
            }
        }
        assertTrue(failures.isEmpty(), String.join("\n", failures));
        assertEquals(ROLES.values().stream().mapToInt(Set::size).sum(), reached, "each allowed (operation, role) tried");
    }

    @Test
    void theDocumentDescribesTheBearerSchemeAndEachOperationsRoles() throws Exception {
        JsonNode doc = JSON.readTree(given().queryParam("format", "json").get("/q/openapi").asString());
        JsonNode scheme = doc.at("/components/securitySchemes/bearer");
        assertEquals("http", scheme.path("type").asText(), doc.path("components").toString());
        assertEquals("bearer", scheme.path("scheme").asText());
        for (Operation op : operations()) {
            JsonNode operation = doc.path("paths").path(op.path()).path(op.method().toLowerCase(java.util.Locale.ROOT));
            Set<String> documented = new TreeSet<>();
            operation.path("security").forEach(req -> req.path("bearer").forEach(role -> documented.add(role.asText())));
            assertEquals(new TreeSet<>(ROLES.get(op.key())), documented, op.key() + ": " + operation.path("security"));
            assertTrue(operation.path("responses").has("401") && operation.path("responses").has("403"),
                    op.key() + " documents its 401 and 403: " + operation.path("responses").fieldNames().next());
        }
    }

    @Test
    void aRotatedTokenAndATokenOfTwoRolesAreHonoured() {
        given().header("Authorization", "Bearer " + AuthOnProfile.ENGINE_NEW).get("/v1/producer/requests/" + PROBE_ID)
                .then().statusCode(404); // the engine's second token: past auth, the request is unknown
        for (String path : List.of("/v1/status", "/v1/registry/self", "/v1/registry")) {
            given().header("Authorization", "Bearer " + AuthOnProfile.PEER_AND_OPERATOR).get(path).then().statusCode(200);
        }
        given().header("Authorization", "Bearer " + AuthOnProfile.PEER_AND_OPERATOR).contentType("application/json")
                .body("{}").post("/v1/producer/prefill").then().statusCode(403);
        // "bearer" in any case is the scheme (RFC 7235)
        given().header("Authorization", "bEaReR " + AuthOnProfile.OPERATOR).get("/v1/status").then().statusCode(200);
    }

    @Test
    void healthMetricsAndOpenApiStayOpenEvenToABadCredential() {
        for (String path : List.of("/q/health/live", "/q/health/ready", "/q/health/started", "/q/metrics", "/q/openapi")) {
            for (String credential : java.util.Arrays.asList(null, "Bearer not-a-token-0123456789abcdef", "Basic x")) {
                RequestSpecification r = given();
                if (credential != null) {
                    r = r.header("Authorization", credential);
                }
                int status = r.get(path).statusCode();
                assertTrue(status == 200, path + " with " + credential + ": " + status);
            }
        }
    }

    /**
     * The calls that move KV or leases, made without a credential (or with the wrong role), leave every
     * lease, pull and block where it was, and are counted by the roles the endpoint allows.
     */
    @Test
    void refusedPrefillPullAbortAndReadOutChangeNothingAndAreCounted() throws Exception {
        String prompt = "the quick brown fox jumps over the lazy dog";
        Map<String, Double> before = refusals();

        // a refused prefill holds nothing
        JsonNode s0 = settledStatus();
        assertEquals(401, given().contentType("application/json").body(prefill("auth-r0", prompt))
                .post("/v1/producer/prefill").statusCode());
        assertEquals(s0, status());
        as("engine").get("/v1/producer/requests/auth-r0").then().statusCode(404);

        // a lease, then a refused abort of it (no credential; the peer role)
        String params = as("router").contentType("application/json").body(prefill("auth-r1", prompt))
                .post("/v1/producer/prefill").then().statusCode(200).extract().asString();
        JsonNode kvParams = JSON.readTree(params).path("kv_transfer_params");
        JsonNode s1 = settledStatus();
        assertEquals(401, given().delete("/v1/producer/requests/auth-r1").statusCode());
        assertEquals(403, as("peer").delete("/v1/producer/requests/auth-r1").statusCode());
        assertEquals(s1, status());
        as("engine").get("/v1/producer/requests/auth-r1").then().statusCode(200);

        // a refused pull starts nothing: P's lease stays unread, D has no pull
        String pull = JSON.writeValueAsString(Map.of("request_id", "auth-r1", "prompt", prompt,
                "kv_transfer_params", kvParams));
        assertEquals(401, given().contentType("application/json").body(pull).post("/v1/consumer/pull").statusCode());
        assertEquals(401, given().header("Authorization", "Bearer not-a-token-0123456789abcdef")
                .contentType("application/json").body(pull).post("/v1/consumer/pull").statusCode());
        assertEquals(s1, status());
        as("engine").get("/v1/consumer/requests/auth-r1").then().statusCode(404);

        // the router pulls; a refused read-out leaves the KV for the engine
        as("router").contentType("application/json").body(pull).post("/v1/consumer/pull").then().statusCode(200);
        JsonNode s2 = settledStatus();
        assertEquals(401, given().get("/v1/consumer/requests/auth-r1/kv").statusCode());
        assertEquals(403, as("router").get("/v1/consumer/requests/auth-r1/kv").statusCode());
        assertEquals(s2, status());
        byte[] kv = as("engine").get("/v1/consumer/requests/auth-r1/kv").then().statusCode(200).extract().asByteArray();
        assertTrue(kv.length > 0);

        Map<String, Double> after = refusals();
        assertEquals(1.0, delta(before, after, "unauthenticated", "router"), "prefill: " + after);
        assertEquals(2.0, delta(before, after, "unauthenticated", "engine,router"), "pull, pull: " + after);
        assertEquals(1.0, delta(before, after, "unauthenticated", "engine,operator,router"), "abort: " + after);
        assertEquals(1.0, delta(before, after, "forbidden", "engine,operator,router"), "abort as peer: " + after);
        assertEquals(1.0, delta(before, after, "unauthenticated", "engine"), "read-out: " + after);
        assertEquals(1.0, delta(before, after, "forbidden", "engine"), "read-out as router: " + after);
        as("operator").delete("/v1/producer/requests/auth-r1"); // P's lease is released by D's read notification or here
    }

    private static String prefill(String id, String prompt) throws Exception {
        return JSON.writeValueAsString(Map.of("request_id", id, "prompt", prompt,
                "kv_transfer_params", Map.of("do_remote_decode", true)));
    }

    private static RequestSpecification as(String role) {
        return given().header("Authorization", "Bearer " + TOKENS.get(role));
    }

    /**
     * The status once the step loops have done what the last accepted call set going: the loops publish their
     * counts at the end of a step, after its replies, and P frees a read lease a step or two after D's pull
     * answered. Two equal reads 100 ms apart, within 10 s.
     */
    private static JsonNode settledStatus() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        JsonNode last = status();
        while (System.nanoTime() < deadline) {
            Thread.sleep(100);
            JsonNode now = status();
            if (now.equals(last)) {
                return now;
            }
            last = now;
        }
        throw new AssertionError("the status kept changing for 10 s: " + last);
    }

    /** What the loops hold (blocks, slots, leases, pulls, queues), without the step heartbeat. */
    private static JsonNode status() throws Exception {
        JsonNode s = JSON.readTree(as("operator").get("/v1/status").then().statusCode(200).extract().asString());
        ((com.fasterxml.jackson.databind.node.ObjectNode) s.path("producer")).remove("ms_since_last_step");
        ((com.fasterxml.jackson.databind.node.ObjectNode) s.path("consumer")).remove("ms_since_last_step");
        return s;
    }

    private static final Pattern REFUSED = Pattern.compile("^pd_auth_refused_total\\{([^}]*)}\\s+(\\S+)$");

    /** {@code reason|role} -> count, from the open /q/metrics. */
    private static Map<String, Double> refusals() {
        Map<String, Double> out = new TreeMap<>();
        for (String line : given().get("/q/metrics").then().statusCode(200).extract().asString().split("\n")) {
            Matcher m = REFUSED.matcher(line.strip());
            if (m.matches()) {
                Map<String, String> tags = new LinkedHashMap<>();
                for (Matcher t = Pattern.compile("(\\w+)=\"([^\"]*)\"").matcher(m.group(1)); t.find();) {
                    tags.put(t.group(1), t.group(2));
                }
                out.put(tags.get("reason") + "|" + tags.get("role"), Double.parseDouble(m.group(2)));
            }
        }
        return out;
    }

    private static double delta(Map<String, Double> before, Map<String, Double> after, String reason, String role) {
        String key = reason + "|" + role;
        return after.getOrDefault(key, 0.0) - before.getOrDefault(key, 0.0);
    }

    private static String problemReason(Response r) {
        try {
            return JSON.readTree(r.asString()).path("reason").asText(null);
        } catch (Exception notJson) {
            return null;
        }
    }
}
