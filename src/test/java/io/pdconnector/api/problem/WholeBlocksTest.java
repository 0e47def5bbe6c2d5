package io.pdconnector.api.problem;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.PdConfigs;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * With pd.model.kv-groups a pull reads a window group's layers of a request's last blocks only, so the paths that
 * use a pulled request's blocks whole answer 409 kv-read-in-part, naming the path and the groups; without groups
 * they pass.
 */
class WholeBlocksTest {

    @Test
    void kvGroupsRefuseWithTheReasonNamingThePathAndTheGroups() {
        ProblemException e = assertThrows(ProblemException.class, () -> WholeBlocks.require(PdConfigs.from(Map.of(
                "pd.model.layers", "2", "pd.model.kv-groups", "window:64/1,full/1")), "a KV read-out"));
        Problem p = e.problem();
        assertEquals(409, p.status());
        assertEquals("urn:pd-connector:problem:kv-read-in-part", p.type());
        assertTrue(p.detail().startsWith("a KV read-out needs a request's blocks whole, and with "
                + "pd.model.kv-groups=window:64/1,full/1 a pull reads"), p.detail());
    }

    @Test
    void oneGroupPasses() {
        WholeBlocks.require(PdConfigs.from(Map.of()), "a KV read-out");
    }
}
