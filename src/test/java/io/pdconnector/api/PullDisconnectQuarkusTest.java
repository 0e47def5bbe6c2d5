package io.pdconnector.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.RestAssured;
import io.restassured.http.ContentType;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.IntSupplier;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.jboss.logmanager.ExtLogRecord;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * Issue 12, hole 4: a router that disconnects while its pull waits (here queued behind a pull that
 * holds D's blocks) gets its pull aborted by D at once, not left to hold blocks and a request id.
 * Issue 22: that is an expected outcome, counted ({@code pd_pulls_caller_gone_total}) and logged at DEBUG,
 * not an ERROR "unexpected failure" answered 500 to nobody.
 */
@QuarkusTest
class PullDisconnectQuarkusTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long DEADLINE_MS = 10_000;

    private static Map<String, Object> prefill(String id, int[] tokens) {
        return given().contentType(ContentType.JSON)
                .body(Map.of("request_id", id, "token_ids", tokens, "kv_transfer_params", Map.of("do_remote_decode", true)))
                .post("/v1/producer/prefill").then().statusCode(200).extract().path("kv_transfer_params");
    }

    private static int[] tokens(int blocks) {
        return IntStream.range(0, blocks * 16).map(i -> 100 + i % 1000).toArray();
    }

    /** Polls until {@code status} returns {@code expected}, within the deadline. */
    private static void awaitStatus(IntSupplier status, int expected, String what) throws InterruptedException {
        long until = System.currentTimeMillis() + DEADLINE_MS;
        int last = status.getAsInt();
        while (last != expected && System.currentTimeMillis() < until) {
            Thread.sleep(20);
            last = status.getAsInt();
        }
        assertEquals(expected, last, what + " within " + DEADLINE_MS + " ms");
    }

    private static int producerBlocksInUse() {
        return given().get("/v1/status").then().extract().path("producer.blocks_in_use");
    }

    private static double callerGone() {
        String metrics = given().get("/q/metrics").then().statusCode(200).extract().asString();
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^pd_pulls_caller_gone_total (\\S+)$")
                .matcher(metrics);
        return m.find() ? Double.parseDouble(m.group(1)) : -1;
    }

    /** Every record io.pdconnector logs while the test runs (DEBUG in the test profile). */
    private static final class Records extends Handler {
        final List<LogRecord> records = new CopyOnWriteArrayList<>();

        @Override
        public void publish(LogRecord r) {
            records.add(r);
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }

        List<String> atErrorOrAbove() {
            return records.stream().filter(r -> r.getLevel().intValue() >= Level.SEVERE.intValue())
                    .map(r -> r.getLoggerName() + ": " + text(r) + (r.getThrown() == null ? "" : " " + r.getThrown()))
                    .toList();
        }

        boolean debugMentions(String text) {
            return records.stream().anyMatch(r -> r.getLevel().intValue() < Level.INFO.intValue()
                    && text(r).contains(text));
        }

        private static String text(LogRecord r) {
            return r instanceof ExtLogRecord e ? e.getFormattedMessage() : String.valueOf(r.getMessage());
        }
    }

    @Test
    void aPullWhoseClientDisconnectsIsAborted() throws Exception {
        Logger logs = Logger.getLogger("io.pdconnector");
        Records records = new Records();
        logs.addHandler(records);
        try {
            aPullWhoseClientDisconnectsIsAborted(records);
        } finally {
            logs.removeHandler(records);
        }
    }

    private void aPullWhoseClientDisconnectsIsAborted(Records records) throws Exception {
        double goneBefore = callerGone();
        assertTrue(goneBefore >= 0, "pd_pulls_caller_gone_total is exported from the start");
        int[] hold = tokens(60);
        Map<String, Object> holdParams = prefill("dc-hold", hold);
        given().contentType(ContentType.JSON)
                .body(Map.of("request_id", "dc-hold", "token_ids", hold, "kv_transfer_params", holdParams))
                .post("/v1/consumer/pull").then().statusCode(200).body("state", equalTo("received"));
        awaitStatus(PullDisconnectQuarkusTest::producerBlocksInUse, 0, "P released dc-hold's lease");
        int[] gone = tokens(10);
        Map<String, Object> goneParams = prefill("dc-gone", gone);
        byte[] body = JSON.writeValueAsBytes(Map.of("request_id", "dc-gone", "token_ids", gone,
                "kv_transfer_params", goneParams));

        try (Socket socket = new Socket("127.0.0.1", RestAssured.port)) {
            OutputStream out = socket.getOutputStream();
            out.write(("POST /v1/consumer/pull HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.write(body);
            out.flush();
            awaitStatus(() -> given().get("/v1/consumer/requests/dc-gone").statusCode(), 200, "dc-gone arrived");
            assertEquals("queued", given().get("/v1/consumer/requests/dc-gone").then().extract().path("state"),
                    "D's blocks are held by dc-hold");
        } // the router goes away

        awaitStatus(() -> given().get("/v1/consumer/requests/dc-gone").statusCode(), 404,
                "D aborted and forgot dc-gone");
        awaitStatus(() -> (int) (callerGone() - goneBefore), 1, "pd_pulls_caller_gone_total counted dc-gone");
        awaitStatus(() -> records.debugMentions("pull dc-gone aborted in QUEUED: its caller went away") ? 1 : 0, 1,
                "D's loop logs the abort of a pull nobody waits for at DEBUG");
        assertEquals(List.of(), records.atErrorOrAbove(), "a caller gone mid-pull is expected: no ERROR");
        given().delete("/v1/consumer/requests/dc-hold").then().statusCode(204);
        awaitStatus(PullDisconnectQuarkusTest::producerBlocksInUse, 0,
                "D's abort told P, which released dc-gone's lease before it expired (vLLM PR #41269)");
        given().delete("/v1/producer/requests/dc-gone").then().statusCode(404);
        int live = given().get("/v1/status").then().extract().path("consumer.pulls_live");
        assertTrue(live == 0, "nothing left on D: " + live);
    }
}
