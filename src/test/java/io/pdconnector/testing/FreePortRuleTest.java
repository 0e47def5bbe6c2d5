package io.pdconnector.testing;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;

/**
 * The test code takes the ports it hands to other processes from {@link FreePort} only. A port from
 * {@code new ServerSocket(0)}, closed and given to a service (or used as "nothing listens here"), is in the
 * kernel's ephemeral range, where any outgoing connection or NIXL listener on the host may take it before
 * the service binds it: one CI run lost a decoder's port that way. A server that keeps its socket bound
 * (an {@code HttpServer} on port 0) is no such race and is not concerned.
 */
class FreePortRuleTest {

    @Test
    void onlyFreePortOpensAServerSocketToFindAPort() {
        JavaClasses tests = new ClassFileImporter().withImportOption(ImportOption.Predefined.ONLY_INCLUDE_TESTS)
                .importPackages("io.pdconnector");
        noClasses().that().doNotBelongToAnyOf(FreePort.class)
                .should().callConstructorWhere(DescribedPredicate.describe("a ServerSocket constructor",
                        call -> call.getTarget().getOwner().isAssignableTo(ServerSocket.class)))
                .because("a port found with new ServerSocket(0) and let go is in the ephemeral range, where"
                        + " another process may bind it first: use FreePort.pick()")
                .check(tests);
    }
}
