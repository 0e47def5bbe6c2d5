package io.pdconnector;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The layering of {@code src/main/java}, kept by the build: each top-level package may use only the
 * packages listed for it here (the README's "Where things live" is this table in words), and no
 * two packages depend on each other in a cycle. A new package must be added here, or the test fails.
 * {@code api} is layered inside too ({@link #API_MAY_USE}): its three callers' interfaces (the OpenAI
 * facade, the engine socket, the router-facing P/D endpoints) share only the P/D package's request
 * helpers and the problem documents, so a change to one interface cannot reach into another.
 */
class ArchitectureTest {

    private static final String ROOT = "io.pdconnector";

    /** Package -> the project packages it may use. Everything points down; leaves use nothing. */
    static final Map<String, Set<String>> MAY_USE = Map.ofEntries(
            Map.entry("api", Set.of("auth", "runtime", "router", "producer", "consumer", "controlplane", "config",
                    "protocol",
                    "reference", "kv", "loop", "error", "transfer")),
            Map.entry("auth", Set.of("config")),
            Map.entry("health", Set.of("runtime", "controlplane", "config", "protocol", "loop", "transfer")),
            Map.entry("runtime", Set.of("metrics", "router", "controlplane", "producer", "consumer", "config", "protocol",
                    "reference", "kv", "loop", "memory", "error", "nixl", "cuda", "transfer")),
            Map.entry("router", Set.of("controlplane", "config", "protocol", "error")),
            Map.entry("metrics", Set.of("controlplane", "producer", "consumer", "config", "loop")),
            Map.entry("controlplane", Set.of("config", "protocol", "kv", "error")),
            Map.entry("producer", Set.of("config", "protocol", "reference", "kv", "loop", "memory", "error",
                    "transfer")),
            Map.entry("consumer", Set.of("config", "protocol", "reference", "kv", "loop", "memory", "error",
                    "transfer")),
            Map.entry("nixl", Set.of("transfer")),
            Map.entry("cuda", Set.of("transfer")),
            Map.entry("config", Set.of("kv")),
            Map.entry("reference", Set.of("kv")),
            Map.entry("protocol", Set.of("kv", "error")),
            Map.entry("memory", Set.of("transfer", "error")),
            Map.entry("loop", Set.of("error")),
            Map.entry("transfer", Set.of()),
            Map.entry("kv", Set.of()),
            Map.entry("error", Set.of()));

    /**
     * Each package of {@code api} -> what it may use: its siblings in {@code api}, and the project's other
     * top-level packages (each of them one {@code api} may use in {@link #MAY_USE}). {@code api} itself is
     * the router-facing P/D endpoints and the request helpers the facade and the engine socket share.
     */
    static final Map<String, Set<String>> API_MAY_USE = Map.ofEntries(
            Map.entry("api", Set.of("api.problem", "runtime", "router", "producer", "consumer", "controlplane",
                    "config", "protocol", "reference", "kv", "loop", "error", "transfer")),
            Map.entry("api.openai", Set.of("api", "api.problem", "runtime", "router", "producer", "consumer",
                    "controlplane", "config", "protocol", "reference", "kv", "error")),
            Map.entry("api.engine", Set.of("api", "api.problem", "auth", "runtime", "producer", "consumer", "config",
                    "protocol", "kv", "loop", "error", "transfer")),
            Map.entry("api.problem", Set.of("auth", "config", "error", "transfer")));

    private static JavaClasses main;

    @BeforeAll
    static void importMainClasses() {
        main = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages(ROOT);
    }

    @Test
    void everyPackageIsInTheLayeringTable() {
        Set<String> packages = main.stream().map(ArchitectureTest::topPackage).filter(p -> !p.isEmpty())
                .collect(Collectors.toCollection(TreeSet::new));
        assertEquals(new TreeSet<>(MAY_USE.keySet()), packages,
                "every top-level package of src/main/java needs a row in MAY_USE (and no row may be stale)");
    }

    @Test
    void everyDependencyPointsDownTheTable() {
        List<String> violations = new ArrayList<>();
        for (JavaClass c : main) {
            String from = topPackage(c);
            for (Dependency d : c.getDirectDependenciesFromSelf()) {
                String to = topPackage(d.getTargetClass());
                if (!to.isEmpty() && !to.equals(from) && !MAY_USE.getOrDefault(from, Set.of()).contains(to)) {
                    violations.add(from + " -> " + to + ": " + d.getDescription());
                }
            }
        }
        assertTrue(violations.isEmpty(), violations.size() + " dependencies break the layering:\n"
                + violations.stream().distinct().sorted().collect(Collectors.joining("\n")));
    }

    @Test
    void noPackageCycles() {
        slices().matching(ROOT + ".(*)..").should().beFreeOfCycles().check(main);
    }

    @Test
    void theTableItselfHasNoCycle() {
        for (String p : MAY_USE.keySet()) {
            assertTrue(!reaches(MAY_USE, p, p, new TreeSet<>()), p + " reaches itself through MAY_USE");
        }
    }

    @Test
    void everyApiPackageIsInItsTable() {
        Set<String> packages = main.stream().filter(c -> topPackage(c).equals("api"))
                .map(ArchitectureTest::apiPackage).collect(Collectors.toCollection(TreeSet::new));
        assertEquals(new TreeSet<>(API_MAY_USE.keySet()), packages,
                "every package of api needs a row in API_MAY_USE (and no row may be stale)");
    }

    @Test
    void apiTableFitsTheLayering() {
        for (var row : API_MAY_USE.entrySet()) {
            for (String used : row.getValue()) {
                assertTrue(used.startsWith("api") ? API_MAY_USE.containsKey(used) : MAY_USE.get("api").contains(used),
                        row.getKey() + " may use " + used + ", which api may not use (or no such api package)");
            }
            assertTrue(!reaches(API_MAY_USE, row.getKey(), row.getKey(), new TreeSet<>()),
                    row.getKey() + " reaches itself through API_MAY_USE");
        }
    }

    @Test
    void everyApiDependencyPointsDownItsTable() {
        List<String> violations = new ArrayList<>();
        for (JavaClass c : main) {
            if (!topPackage(c).equals("api")) {
                continue;
            }
            String from = apiPackage(c);
            for (Dependency d : c.getDirectDependenciesFromSelf()) {
                String top = topPackage(d.getTargetClass());
                String to = top.equals("api") ? apiPackage(d.getTargetClass()) : top;
                if (!to.isEmpty() && !to.equals(from) && !API_MAY_USE.get(from).contains(to)) {
                    violations.add(from + " -> " + to + ": " + d.getDescription());
                }
            }
        }
        assertTrue(violations.isEmpty(), violations.size() + " dependencies break the api's layering:\n"
                + violations.stream().distinct().sorted().collect(Collectors.joining("\n")));
    }

    /** The facade and the engine socket are two callers' interfaces: neither may lean on the other. */
    @Test
    void openAiAndEngineSocketDoNotUseEachOther() {
        noClasses().that().resideInAPackage(ROOT + ".api.openai..")
                .should().dependOnClassesThat().resideInAPackage(ROOT + ".api.engine..").check(main);
        noClasses().that().resideInAPackage(ROOT + ".api.engine..")
                .should().dependOnClassesThat().resideInAPackage(ROOT + ".api.openai..").check(main);
    }

    /** "io.pdconnector.api.engine.X" -> "api.engine"; "io.pdconnector.api.X" -> "api". */
    private static String apiPackage(JavaClass c) {
        String rest = c.getPackageName().substring(ROOT.length() + 1);
        int dot = rest.indexOf('.', "api.".length());
        return dot < 0 ? rest : rest.substring(0, dot);
    }

    private static boolean reaches(Map<String, Set<String>> table, String from, String target, Set<String> seen) {
        for (String next : table.getOrDefault(from, Set.of())) {
            if (next.equals(target) || seen.add(next) && reaches(table, next, target, seen)) {
                return true;
            }
        }
        return false;
    }

    /** "io.pdconnector.transfer.loopback.X" -> "transfer"; a class outside the project -> "". */
    private static String topPackage(JavaClass c) {
        String pkg = c.getPackageName();
        if (!pkg.startsWith(ROOT + ".")) {
            return "";
        }
        String rest = pkg.substring(ROOT.length() + 1);
        int dot = rest.indexOf('.');
        return dot < 0 ? rest : rest.substring(0, dot);
    }
}
