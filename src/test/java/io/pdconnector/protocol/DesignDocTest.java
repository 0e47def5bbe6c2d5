package io.pdconnector.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * docs/design.md stays true to the code: the connector version it states is {@link
 * HandshakeMetadata#CONNECTOR_VERSION}, it names every counterexample trail and Java mutant patch the model
 * directory holds (and none that is gone), and every test it names exists, with a method of the rule's
 * prefix where it names one ({@code LeaseRulesTest.L7_*}).
 */
class DesignDocTest {

    private static final Path PAGE = Path.of("docs/design.md");

    private static String page() throws IOException {
        return Files.readString(PAGE);
    }

    @Test
    void statesTheConnectorVersionOfTheCode() throws IOException {
        Matcher m = Pattern.compile("connector version is \\*\\*(\\d+)\\*\\*").matcher(page());
        assertTrue(m.find(), PAGE + " states the connector version as: The connector version is **N**");
        assertEquals(HandshakeMetadata.CONNECTOR_VERSION, Integer.parseInt(m.group(1)),
                PAGE + " states another connector version than HandshakeMetadata.CONNECTOR_VERSION");
    }

    @Test
    void namesEveryTrailAndEveryMutantThereIs() throws IOException {
        String page = page();
        assertEquals(files("model/trails", "MUT_.*\\.txt"), named(page, "MUT_[A-Z0-9_]+\\.txt"),
                PAGE + " names the trails of model/trails/, all and only those");
        assertEquals(files("model/java-mutants", "L[0-9A-Z]+\\.patch"), named(page, "(?<![/\\w-])L[0-9]+B?\\.patch"),
                PAGE + " names the patches of model/java-mutants/, all and only those");
    }

    @Test
    void everyTestItNamesExistsWithTheRulesMethods() throws IOException {
        Map<String, Path> tests;
        try (Stream<Path> files = Files.walk(Path.of("src/test/java"))) {
            tests = files.filter(p -> p.toString().endsWith(".java"))
                    .collect(Collectors.toMap(p -> p.getFileName().toString().replace(".java", ""), p -> p, (a, b) -> a));
        }
        List<String> wrong = new ArrayList<>();
        Matcher m = Pattern.compile("`(?:[a-z]+/)?([A-Z][A-Za-z0-9]*(?:Test|IT))(?:[.#](L[0-9]+_)?[A-Za-z0-9_*]*)?`").matcher(page());
        while (m.find()) {
            Path source = tests.get(m.group(1));
            if (source == null) {
                wrong.add(m.group() + ": no such test class under src/test/java");
            } else if (m.group(2) != null && !Pattern.compile("\\b" + m.group(2) + "\\w*\\s*\\(").matcher(read(source)).find()) {
                wrong.add(m.group() + ": " + source + " has no method " + m.group(2) + "...");
            }
        }
        assertEquals(List.of(), wrong, PAGE + " names tests that do not exist");
    }

    private static TreeSet<String> named(String page, String regex) {
        TreeSet<String> names = new TreeSet<>();
        Matcher m = Pattern.compile(regex).matcher(page);
        while (m.find()) {
            names.add(m.group());
        }
        return names;
    }

    private static TreeSet<String> files(String dir, String regex) throws IOException {
        try (Stream<Path> files = Files.list(Path.of(dir))) {
            return files.map(p -> p.getFileName().toString()).filter(n -> n.matches(regex))
                    .collect(Collectors.toCollection(TreeSet::new));
        }
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
