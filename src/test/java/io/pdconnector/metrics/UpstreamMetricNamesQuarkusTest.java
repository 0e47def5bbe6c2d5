package io.pdconnector.metrics;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * With {@code pd.metrics.prefix=vllm:}, {@code /q/metrics} carries vLLM 0.32's NIXL connector families by
 * their upstream names and types, as listed in docs/operations.md (the list an operator reads), and no other
 * {@code nixl_} family than the project's own listed beside it, each labelled {@code model_name} and {@code engine}
 * as upstream labels them: a dashboard built for vLLM works unchanged.
 */
@QuarkusTest
@TestProfile(VllmPrefixProfile.class)
class UpstreamMetricNamesQuarkusTest {

    private static final Pattern ROW = Pattern.compile("(?m)^\\s*\\| `([^`]+)` \\| (\\w+) \\|");
    private static final Pattern TYPE = Pattern.compile("(?m)^# TYPE (\\S+) (\\w+)$");

    @Test
    void everyUpstreamNixlFamilyIsExportedByItsNameAndType() throws IOException {
        Map<String, String> upstream = readmeTable("vllm-0.32-nixl-metrics");
        assertEquals(8, upstream.size(), "docs/operations.md lists vLLM 0.32's eight NIXL families: " + upstream);
        String body = scrape();
        Map<String, String> exported = nixlFamilies(body);
        upstream.forEach((name, type) -> {
            assertEquals(type, exported.get(name), name + " in /q/metrics");
            for (String series : type.equals("counter") ? List.of("_total") : List.of("_bucket", "_sum", "_count")) {
                assertTrue(Pattern.compile("(?m)^" + Pattern.quote(name + series) + "[ {]").matcher(body).find(),
                        "series " + name + series + " scraped as upstream's");
            }
        });
    }

    @Test
    void everyNixlSampleCarriesUpstreamsModelNameAndEngineLabels() {
        String body = scrape();
        Matcher sample = Pattern.compile("(?m)^(vllm:nixl_[a-z_]+)(\\{[^}]*\\})? \\S+$").matcher(body);
        int samples = 0;
        while (sample.find()) {
            String labels = sample.group(2) == null ? "" : sample.group(2);
            assertTrue(labels.contains("model_name=\"" + VllmPrefixProfile.MODEL_NAME + "\"")
                    && labels.contains("engine=\"" + VllmPrefixProfile.ENGINE + "\""),
                    "upstream's labels on " + sample.group(1) + labels);
            samples++;
        }
        assertTrue(samples >= 8, "nixl samples scraped: " + samples);
    }

    @Test
    void noOtherNixlFamilyIsExportedThanUpstreamsAndTheProjectsListedOnes() throws IOException {
        Map<String, String> listed = new TreeMap<>(readmeTable("vllm-0.32-nixl-metrics"));
        listed.putAll(readmeTable("pd-nixl-metrics"));
        Map<String, String> exported = nixlFamilies(scrape());
        // Micrometer exports a Timer's or summary's maximum as a gauge family of its own, beside the histogram.
        exported.keySet().removeIf(name -> name.endsWith("_max")
                && "histogram".equals(listed.get(name.substring(0, name.length() - 4))));
        assertFalse(exported.isEmpty(), "nixl families exported");
        assertEquals(listed, exported, "exported nixl families are the lists of docs/operations.md");
    }

    /** Rows of the docs/operations.md table between {@code <!-- marker:begin -->} and {@code <!-- marker:end -->}. */
    static Map<String, String> readmeTable(String marker) throws IOException {
        String readme = Files.readString(Path.of("docs/operations.md"));
        int begin = readme.indexOf("<!-- " + marker + ":begin -->");
        int end = readme.indexOf("<!-- " + marker + ":end -->");
        if (begin < 0 || end < begin) {
            throw new AssertionError("docs/operations.md has no " + marker + " table");
        }
        Map<String, String> rows = new TreeMap<>();
        Matcher m = ROW.matcher(readme.substring(begin, end));
        while (m.find()) {
            rows.put(m.group(1), m.group(2));
        }
        return rows;
    }

    private static String scrape() {
        return given().get("/q/metrics").then().statusCode(200).extract().asString();
    }

    private static Map<String, String> nixlFamilies(String body) {
        Map<String, String> families = new TreeMap<>();
        Matcher m = TYPE.matcher(body);
        while (m.find()) {
            if (m.group(1).contains("nixl_")) {
                families.put(m.group(1), m.group(2));
            }
        }
        return families;
    }
}
