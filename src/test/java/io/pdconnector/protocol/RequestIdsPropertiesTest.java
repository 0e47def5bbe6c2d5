package io.pdconnector.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.pdconnector.api.ReserveRequest;
import io.pdconnector.error.InvalidInputException;
import io.pdconnector.testing.Gen;
import io.pdconnector.testing.Property;
import jakarta.validation.Validation;
import jakarta.validation.Validator;
import java.util.regex.Pattern;
import org.hibernate.validator.HibernateValidator;
import org.hibernate.validator.messageinterpolation.ParameterMessageInterpolator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Properties of {@link RequestIds}, the one rule for request ids: {@link RequestIds#isValid} agrees
 * with the rule as documented (1..256 characters, not all blank, no ':' or ',' or control
 * character or unpaired surrogate, not {@code HB}), with what the HTTP layer enforces through
 * {@link RequestIds#PATTERN} and {@code @NotBlank} (checked by running Bean Validation on
 * {@link ReserveRequest}), and with {@link RequestIds#require}.
 *
 * <p>Each property runs its tries on inputs of {@link Gen} from a fixed seed (see {@link Property}).
 * A failure's message names the seed, the try and the input, and the replay of exactly that try:
 * {@code -Dtest='RequestIdsPropertiesTest#<property>' -Dpd.prop.seed=<seed> -Dpd.prop.try=<try>}.
 * For a longer local run: {@code -Dpd.prop.seed=<any> -Dpd.prop.tries=<n>}.
 */
class RequestIdsPropertiesTest {

    private static jakarta.validation.ValidatorFactory factory;
    private static Validator validator;

    @BeforeAll
    static void startValidation() {
        factory = Validation.byProvider(HibernateValidator.class).configure()
                .messageInterpolator(new ParameterMessageInterpolator()).buildValidatorFactory();
        validator = factory.getValidator();
    }

    @AfterAll
    static void stopValidation() {
        factory.close();
    }

    @Test
    void isValidIsTheDocumentedRule() {
        Property.forAll(1201_01L, 1000, RequestIdsPropertiesTest::anyId, id ->
                assertEquals(documentedRule(id), RequestIds.isValid(id), () -> describe(id)));
    }

    @Test
    void isValidAgreesWithThePatternPlusNotBlank() {
        Property.forAll(1201_02L, 1000, RequestIdsPropertiesTest::anyId, id -> {
            boolean pattern = Pattern.compile(RequestIds.PATTERN).matcher(id).matches();
            assertEquals(pattern && !id.isBlank(), RequestIds.isValid(id), () -> describe(id));
        });
    }

    @Test
    void theHttpLayerAcceptsExactlyTheValidIds() {
        Property.forAll(1201_03L, 1000, RequestIdsPropertiesTest::anyId, id -> {
            boolean http = validator.validateValue(ReserveRequest.class, "requestId", id).isEmpty();
            assertEquals(RequestIds.isValid(id), http, () -> describe(id));
        });
    }

    @Test
    void requireThrowsExactlyForInvalidIds() {
        Property.forAll(1201_04L, 1000, RequestIdsPropertiesTest::anyId, id -> {
            if (RequestIds.isValid(id)) {
                assertSame(id, RequestIds.require(id));
            } else {
                assertThrows(InvalidInputException.class, () -> RequestIds.require(id), () -> describe(id));
            }
        });
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
        return ProtocolGenerators.describe(id);
    }

    /** Hostile strings, valid ids, C1 controls among 'a' and ' ', and short runs of Unicode whitespace. */
    private static String anyId(Gen g) {
        return switch (g.below(4)) {
            case 0 -> ProtocolGenerators.nastyString(g, 300);
            case 1 -> ProtocolGenerators.validRequestId(g);
            case 2 -> g.string(0, 5, Gen.chars('\u0080', '\u009f') + "a ");
            default -> g.string(1, 5, WHITESPACE + "\u0085\u00a0\u1680\u2000\u2028\u3000\ufeff");
        };
    }

    /** The chars {@link Character#isWhitespace} accepts. */
    private static final String WHITESPACE = whitespace();

    private static String whitespace() {
        StringBuilder sb = new StringBuilder();
        for (char c = 0; c < Character.MAX_VALUE; c++) {
            if (Character.isWhitespace(c)) {
                sb.append(c);
            }
        }
        return sb.toString();
    }
}
