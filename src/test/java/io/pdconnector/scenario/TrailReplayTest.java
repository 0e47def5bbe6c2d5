package io.pdconnector.scenario;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.testing.Trail;
import io.pdconnector.testing.TrailReplay;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The model checker's counterexamples as regression schedules: each trail in
 * {@code model/trails/} (a schedule that breaks the protocol once one rule L1-L9, L11-L13 or one guard
 * G1-G7 of the engine path is removed) is
 * replayed against the Java loops, which keep every rule, and the model's properties must hold
 * (see {@link TrailReplay}). Regenerating the trails ({@code bash model/check.sh}) updates this
 * test; a trail event the replay does not know fails it.
 */
class TrailReplayTest {

    private static final Path TRAILS = Path.of("model", "trails");
    /** What Java did at each model event, for reading next to the trail. */
    private static final Path TRANSCRIPTS = Path.of("target", "trail-replays");
    /** Properties a trail can break before any pull: the replay checks them on P's leases and grants. */
    private static final java.util.regex.Pattern PRODUCER_SIDE = java.util.regex.Pattern.compile(
            "(notif_own_attempt|hb_own_attempt|lifetime_bounded|copy_into_granted_block)");

    static Stream<Path> trails() throws IOException {
        try (Stream<Path> files = Files.list(TRAILS)) {
            return files.filter(f -> f.getFileName().toString().matches("MUT_.*\\.txt")).sorted().toList().stream();
        }
    }

    @Test
    void thereIsATrailForEveryRuleTheModelShowsNecessary() throws IOException {
        List<String> names = trails().map(f -> f.getFileName().toString()).toList();
        for (String rule : List.of("L1", "L2", "L3", "L4", "L5", "L6", "L7", "L8", "L9", "L11", "L12", "L13",
                "G1", "G2", "G3", "G4", "G5", "G6", "G7")) {
            assertTrue(names.stream().anyMatch(n -> n.startsWith("MUT_" + rule)), "no trail for " + rule + ": "
                    + names);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("trails")
    void theJavaLoopsKeepTheModelsPropertiesOnTheTrailsSchedule(Path file) throws IOException {
        Trail trail = Trail.read(file);
        try (TrailReplay replay = new TrailReplay(trail)) {
            try {
                replay.run();
            } finally {
                Files.createDirectories(TRANSCRIPTS);
                Files.writeString(TRANSCRIPTS.resolve(trail.name() + ".txt"), replay.transcript() + "\n");
            }
            assertTrue(!replay.outcomes().isEmpty() || PRODUCER_SIDE.matcher(trail.violated()).lookingAt(),
                    "the trail pulled something, or breaks a property the replay checks on P alone");
            System.out.println(trail.name() + " (" + trail.configuration() + "): " + replay.outcomes());
        }
    }
}
