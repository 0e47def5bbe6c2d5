package io.pdconnector;

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
            assertTrue(!reaches(p, p, new TreeSet<>()), p + " reaches itself through MAY_USE");
        }
    }

    private static boolean reaches(String from, String target, Set<String> seen) {
        for (String next : MAY_USE.getOrDefault(from, Set.of())) {
            if (next.equals(target) || seen.add(next) && reaches(next, target, seen)) {
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
