package io.pdconnector.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.pdconnector.api.ReserveRequest;
import io.pdconnector.error.InvalidInputException;
import jakarta.validation.Validation;
import jakarta.validation.Validator;
import java.util.regex.Pattern;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.hibernate.validator.HibernateValidator;
import org.hibernate.validator.messageinterpolation.ParameterMessageInterpolator;

/**
 * Properties of {@link RequestIds}, the one rule for request ids: {@link RequestIds#isValid} agrees
 * with the rule as documented (1..256 characters, not all blank, no ':' or ',' or control
 * character or unpaired surrogate, not {@code HB}), with what the HTTP layer enforces through
 * {@link RequestIds#PATTERN} and {@code @NotBlank} (checked by running Bean Validation on
 * {@link ReserveRequest}), and with {@link RequestIds#require}.
 *
 * <p>On a failure jqwik prints the shrunk sample and a line {@code seed = <n>}; replay exactly that
 * run with {@code @Property(seed = "<n>")} on the failing property (jqwik also re-runs the last
 * failing sample first on the next run, from its database file {@code .jqwik-database}).
 */
class RequestIdsPropertiesTest {

    private static jakarta.validation.ValidatorFactory factory;
    private static Validator validator;

    @BeforeContainer
    static void startValidation() {
        factory = Validation.byProvider(HibernateValidator.class).configure()
                .messageInterpolator(new ParameterMessageInterpolator()).buildValidatorFactory();
        validator = factory.getValidator();
    }

    @AfterContainer
    static void stopValidation() {
        factory.close();
    }

    @Property(tries = 1000)
    void isValidIsTheDocumentedRule(@ForAll("anyIds") String id) {
        assertEquals(documentedRule(id), RequestIds.isValid(id), () -> describe(id));
    }

    @Property(tries = 1000)
    void isValidAgreesWithThePatternPlusNotBlank(@ForAll("anyIds") String id) {
        boolean pattern = Pattern.compile(RequestIds.PATTERN).matcher(id).matches();
        assertEquals(pattern && !id.isBlank(), RequestIds.isValid(id), () -> describe(id));
    }

    @Property(tries = 1000)
    void theHttpLayerAcceptsExactlyTheValidIds(@ForAll("anyIds") String id) {
        boolean http = validator.validateValue(ReserveRequest.class, "requestId", id).isEmpty();
        assertEquals(RequestIds.isValid(id), http, () -> describe(id));
    }

    @Property(tries = 1000)
    void requireThrowsExactlyForInvalidIds(@ForAll("anyIds") String id) {
        if (RequestIds.isValid(id)) {
            assertSame(id, RequestIds.require(id));
        } else {
            assertThrows(InvalidInputException.class, () -> RequestIds.require(id), () -> describe(id));
        }
    }

    /** The rule in RequestIds' words, spelled with Character's methods rather than the regex. */
    private static boolean documentedRule(String id) {
        int length = id.codePointCount(0, id.length());
        return length >= 1 && length <= RequestIds.MAX_LENGTH && !id.equals("HB")
                && !id.codePoints().allMatch(Character::isWhitespace)
                && id.codePoints().noneMatch(c -> c == ':' || c == ',' || Character.isISOControl(c)
                        || Character.getType(c) == Character.SURROGATE);
    }

    private static String describe(String id) {
        return ProtocolArbitraries.describe(id);
    }

    @Provide
    Arbitrary<String> anyIds() {
        return Arbitraries.oneOf(ProtocolArbitraries.nastyStrings(300), ProtocolArbitraries.validRequestIds(),
                Arbitraries.strings().withCharRange('\u0080', '\u009f').withChars("a ").ofMaxLength(5),
                Arbitraries.strings().whitespace().withChars("\u0085\u00a0\u1680\u2000\u2028\u3000\ufeff")
                        .ofMinLength(1).ofMaxLength(5));
    }
}
