package io.pdconnector.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.smallrye.config.ConfigMappingInterface.Property;
import io.smallrye.config.ConfigMappings;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * docs/configuration.md is the configuration reference: one table row per key of the one
 * {@code @ConfigMapping} root ({@link PdConfig}), with its default. This test fails when a key of the mapping
 * has no row, when a row names a key the mapping does not have, when a row's default is not the mapping's
 * {@code @WithDefault}, and when README.md or any page of docs/ names a {@code pd.*} key that does not exist
 * (outside {@code ```text} blocks, which hold recorded output).
 */
class ConfigReferenceTest {

    static final Path PAGE = Path.of("docs/configuration.md");
    /** A table row whose first cell is one backticked key: {@code | `pd.lease.duration` | `30s` | ... |}. */
    private static final Pattern ROW = Pattern.compile("^\\|\\s*`(pd\\.[a-z0-9.-]+)`\\s*\\|([^|]*)\\|");
    /** A key named in prose: {@code pd.lease.duration}, {@code pd.model.*}, {@code pd.auth.tokens.<role>}. */
    private static final Pattern NAMED = Pattern.compile("(?<![A-Za-z0-9_./-])(pd(?:\\.[a-z0-9][a-z0-9-]*)+)(\\.\\*|\\.<[a-z-]+>)?");

    /** Every key of the mapping, as a user writes it (a list's element form {@code key[*]} left out). */
    static Map<String, Property> mappingKeys() {
        Map<String, Property> keys =
                new TreeMap<>(ConfigMappings.getProperties(ConfigMappings.ConfigClass.configClass(PdConfig.class, "pd")));
        keys.keySet().removeIf(key -> key.endsWith("[*]"));
        return keys;
    }

    /** Each documented key and the text of its default cell, in page order. */
    static Map<String, String> documentedKeys(String page) {
        Map<String, String> rows = new TreeMap<>();
        for (String line : page.lines().toList()) {
            Matcher m = ROW.matcher(line);
            if (m.find()) {
                String previous = rows.put(m.group(1), m.group(2).strip());
                assertTrue(previous == null, PAGE + " has two rows for " + m.group(1));
            }
        }
        return rows;
    }

    @Test
    void everyKeyOfTheMappingHasARowAndEveryRowIsAKey() throws IOException {
        Map<String, Property> keys = mappingKeys();
        Map<String, String> rows = documentedKeys(Files.readString(PAGE));
        TreeSet<String> missing = new TreeSet<>(keys.keySet());
        missing.removeAll(rows.keySet());
        TreeSet<String> unknown = new TreeSet<>(rows.keySet());
        unknown.removeAll(keys.keySet());
        assertTrue(missing.isEmpty() && unknown.isEmpty(), PAGE + " and PdConfig disagree:"
                + (missing.isEmpty() ? "" : " keys of PdConfig without a row: " + missing + ";")
                + (unknown.isEmpty() ? "" : " rows naming no key of PdConfig: " + unknown + ";"));
    }

    @Test
    void everyDocumentedDefaultIsTheMappingsDefault() throws IOException {
        Map<String, Property> keys = mappingKeys();
        Map<String, String> rows = documentedKeys(Files.readString(PAGE));
        List<String> wrong = new ArrayList<>();
        keys.forEach((key, property) -> {
            String documented = rows.get(key);
            if (documented != null && property.hasDefaultValue()
                    && !documented.equals("`" + property.getDefaultValue() + "`")) {
                wrong.add(key + ": the page says " + documented + ", PdConfig `" + property.getDefaultValue() + "`");
            }
        });
        assertEquals(List.of(), wrong, PAGE + ": defaults that are not PdConfig's @WithDefault");
    }

    @Test
    void everyKeyTheDocsNameExists() throws IOException {
        TreeSet<String> keys = new TreeSet<>(mappingKeys().keySet());
        List<String> unknown = new ArrayList<>();
        for (Path doc : docs()) {
            List<String> lines = Files.readAllLines(doc);
            boolean output = false; // inside a ```text block: a recorded output, not a claim about keys
            for (int i = 0; i < lines.size(); i++) {
                String fence = lines.get(i).strip();
                if (fence.startsWith("```")) {
                    output = !output && fence.equals("```text");
                    continue;
                }
                if (output) {
                    continue;
                }
                Matcher m = NAMED.matcher(lines.get(i));
                while (m.find()) {
                    String name = m.group(1).replaceAll("\\.$", "");
                    boolean prefix = m.group(2) != null;
                    boolean exists = prefix
                            ? keys.stream().anyMatch(k -> k.startsWith(name + "."))
                            : keys.contains(name) || keys.stream().anyMatch(k -> k.startsWith(name + "."));
                    if (!exists) {
                        unknown.add(doc + ":" + (i + 1) + ": " + m.group());
                    }
                }
            }
        }
        assertEquals(List.of(), unknown, "pd.* keys named in the docs that PdConfig does not have");
    }

    private static List<Path> docs() {
        List<Path> docs = new ArrayList<>(List.of(Path.of("README.md")));
        try (Stream<Path> files = Files.walk(Path.of("docs"))) {
            files.filter(p -> p.toString().endsWith(".md")).sorted().forEach(docs::add);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return docs;
    }
}
