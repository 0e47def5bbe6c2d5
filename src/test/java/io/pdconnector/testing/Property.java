package io.pdconnector.testing;

import java.lang.reflect.RecordComponent;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Collection;
import java.util.Iterator;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * Runs a property: a check on generated inputs, {@code tries} times, each try on its own
 * {@link Gen} seeded from the property's seed and the try's number, so one try replays alone.
 * Each property has a fixed default seed (CI runs the same inputs every time); system properties
 * change that for a local run:
 * <ul>
 * <li>{@code -Dpd.prop.seed=<n>}: another seed (decimal or 0x hex) for every property run;
 * <li>{@code -Dpd.prop.tries=<n>}: that many tries instead of each property's own count;
 * <li>{@code -Dpd.prop.try=<n>}: only try {@code n} (with the seed in effect): a failure's replay.
 * </ul>
 * A failing try (an assertion or any exception) fails the test with an {@link AssertionError} whose
 * message names the seed, the try, the generated input and the command line that replays it;
 * inputs are not shrunk.
 */
public final class Property {

    public static final String SEED = "pd.prop.seed";
    public static final String TRIES = "pd.prop.tries";
    public static final String TRY = "pd.prop.try";

    private static final int MAX_SHOWN = 4000;

    private Property() {
    }

    /**
     * Checks {@code property} on {@code tries} inputs of {@code generator} (or as the system
     * properties say), the first failure failing the test.
     */
    public static <T> void forAll(long defaultSeed, int tries, Function<Gen, ? extends T> generator,
            Consumer<? super T> property) {
        long seed = longProperty(SEED, defaultSeed);
        int count = (int) longProperty(TRIES, tries);
        int only = (int) longProperty(TRY, 0);
        for (int t = only > 0 ? only : 1; t <= (only > 0 ? only : count); t++) {
            T input;
            try {
                input = generator.apply(new Gen(trySeed(seed, t)));
            } catch (RuntimeException e) {
                throw new AssertionError(header(seed, t, count) + "\n  generator failed: " + e, e);
            }
            try {
                property.accept(input);
            } catch (AssertionError | RuntimeException | StackOverflowError e) {
                throw new AssertionError(header(seed, t, count) + "\n  input: " + show(input)
                        + "\n  failure: " + e, e);
            }
        }
    }

    /** The seed of try {@code t}: the property's seed and the try's number, mixed (SplitMix64). */
    static long trySeed(long seed, int t) {
        long z = seed + t * 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    private static long longProperty(String name, long otherwise) {
        String v = System.getProperty(name, "").strip();
        return v.isEmpty() ? otherwise : Long.decode(v);
    }

    private static String header(long seed, int t, int count) {
        return "property failed at try " + t + " of " + count + ", seed " + seed + " (replay: -Dtest='"
                + caller() + "' -D" + SEED + "=" + seed + " -D" + TRY + "=" + t + ")";
    }

    /** {@code Class#method} of the test that called forAll. */
    private static String caller() {
        return StackWalker.getInstance().walk(frames -> frames
                .filter(f -> !f.getClassName().equals(Property.class.getName()))
                .findFirst()
                .map(f -> f.getClassName().substring(f.getClassName().lastIndexOf('.') + 1) + "#" + f.getMethodName())
                .orElse("?"));
    }

    /**
     * A generated value, readable whatever the console's encoding and exact about what the checks
     * see: strings and bytes escaped (\\uXXXX, \\xNN), numbers with their type, records by
     * component; cut at a few thousand characters (the replay has the whole input).
     */
    public static String show(Object value) {
        StringBuilder sb = new StringBuilder();
        show(value, sb);
        return sb.length() > MAX_SHOWN ? sb.substring(0, MAX_SHOWN) + "... (cut; replay for the whole input)"
                : sb.toString();
    }

    private static void show(Object v, StringBuilder sb) {
        if (sb.length() > MAX_SHOWN) {
            return;
        }
        switch (v) {
            case null -> sb.append("null");
            case String s -> showString(s, sb);
            case Character c -> showString(String.valueOf(c), sb.append("char "));
            case byte[] b -> showBytes(b, sb);
            case Integer i -> sb.append(i);
            case Long l -> sb.append(l).append('L');
            case Double d -> sb.append(d).append('d');
            case Float f -> sb.append(f).append('f');
            case BigInteger b -> sb.append("BigInteger(").append(b.bitLength() > 256 ? "~2^" + b.bitLength() : b)
                    .append(')');
            case BigDecimal d -> sb.append("BigDecimal(").append(d.precision() > 80 ? d.round(
                    new java.math.MathContext(20)) + "~" : d).append(')');
            case Map<?, ?> m -> {
                sb.append('{');
                Iterator<? extends Map.Entry<?, ?>> it = m.entrySet().iterator();
                while (it.hasNext() && sb.length() <= MAX_SHOWN) {
                    Map.Entry<?, ?> e = it.next();
                    show(e.getKey(), sb);
                    show(e.getValue(), sb.append(": "));
                    sb.append(it.hasNext() ? ", " : "");
                }
                sb.append('}');
            }
            case Collection<?> c -> {
                sb.append('[');
                Iterator<?> it = c.iterator();
                while (it.hasNext() && sb.length() <= MAX_SHOWN) {
                    show(it.next(), sb);
                    sb.append(it.hasNext() ? ", " : "");
                }
                sb.append(']');
            }
            case Record r -> {
                sb.append(r.getClass().getSimpleName()).append('[');
                RecordComponent[] components = r.getClass().getRecordComponents();
                for (int i = 0; i < components.length; i++) {
                    sb.append(i == 0 ? "" : ", ").append(components[i].getName()).append('=');
                    try {
                        var accessor = components[i].getAccessor();
                        accessor.setAccessible(true);
                        show(accessor.invoke(r), sb);
                    } catch (ReflectiveOperationException | RuntimeException e) {
                        sb.append('?');
                    }
                }
                sb.append(']');
            }
            default -> showString(String.valueOf(v), sb.append(v.getClass().getSimpleName()).append(' '));
        }
    }

    private static void showString(String s, StringBuilder sb) {
        sb.append('"');
        for (int i = 0; i < s.length() && sb.length() <= MAX_SHOWN; i++) {
            char c = s.charAt(i);
            if (c >= ' ' && c <= '~' && c != '"' && c != '\\') {
                sb.append(c);
            } else {
                sb.append(String.format("\\u%04X", (int) c));
            }
        }
        sb.append('"');
        if (s.length() > 40) {
            sb.append(" (").append(s.length()).append(" chars)");
        }
    }

    private static void showBytes(byte[] b, StringBuilder sb) {
        sb.append("bytes[").append(b.length).append("] \"");
        for (int i = 0; i < b.length && sb.length() <= MAX_SHOWN; i++) {
            int c = b[i] & 0xff;
            if (c >= ' ' && c <= '~' && c != '"' && c != '\\') {
                sb.append((char) c);
            } else {
                sb.append(String.format("\\x%02X", c));
            }
        }
        sb.append('"');
    }
}
