package io.pdconnector.testing;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * A small seeded generator of test inputs, for the property tests ({@link Property#forAll}): the same
 * seed gives the same values, on every machine and JDK ({@link SplittableRandom}'s algorithm is
 * specified). Numbers lean on their edges (the range's ends, 0, -1, the int and long limits, 2^53 +-1)
 * and sizes on empty, full and short; a generator of anything composite is a plain method taking a
 * {@code Gen}, and a weighted choice between generators a {@code switch} on {@link #frequency}.
 * Every size is given by the caller, so no try can exhaust the heap.
 */
public final class Gen {

    /** printable ASCII, ' ' to '~'. */
    public static final String PRINTABLE_ASCII = chars(' ', '~');

    private static final long[] EDGE_LONGS = {0, 1, -1, 2, Integer.MIN_VALUE, Integer.MAX_VALUE,
        Integer.MIN_VALUE + 1L, Integer.MAX_VALUE - 1L, Integer.MIN_VALUE - 1L, Integer.MAX_VALUE + 1L,
        Long.MIN_VALUE, Long.MAX_VALUE, Long.MIN_VALUE + 1, Long.MAX_VALUE - 1, (1L << 53) - 1, 1L << 53,
        (1L << 53) + 1, -(1L << 53) - 1, -(1L << 53), -(1L << 53) + 1};

    private static final double[] EDGE_DOUBLES = {0.0, -0.0, 1.0, -1.0, 1.5, -1.5, 0.1, 2.0, 1e300, -1e300,
        Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.MIN_VALUE, -Double.MIN_VALUE,
        Double.MIN_NORMAL, Double.MAX_VALUE, -Double.MAX_VALUE, 0x1p31, 0x1p32, 0x1p53 - 1, 0x1p53, 0x1p53 + 2,
        0x1p63, -0x1p63, 9.2e18, 0x1p64, Math.nextUp(1.0), Math.nextDown(1.0)};

    /** Bytes that make UTF-8 interesting: continuation, overlong and surrogate leads, never-valid ones. */
    private static final byte[] UTF8_EDGE_BYTES = {0x00, 0x7f, (byte) 0x80, (byte) 0xbf, (byte) 0xc0, (byte) 0xc1,
        (byte) 0xc2, (byte) 0xdf, (byte) 0xe0, (byte) 0xed, (byte) 0xef, (byte) 0xf0, (byte) 0xf4, (byte) 0xf5,
        (byte) 0xfe, (byte) 0xff, ':', ',', 'H', 'B', '0', '1', '-', '+'};

    private final SplittableRandom random;

    public Gen(long seed) {
        random = new SplittableRandom(seed);
    }

    /** The characters {@code from} to {@code to}, both included: an alphabet for {@link #string}. */
    public static String chars(char from, char to) {
        StringBuilder sb = new StringBuilder();
        for (int c = from; c <= to; c++) {
            sb.append((char) c);
        }
        return sb.toString();
    }

    /** {@code alphabet} without the characters of {@code excluded}. */
    public static String without(String alphabet, String excluded) {
        StringBuilder sb = new StringBuilder();
        alphabet.chars().filter(c -> excluded.indexOf(c) < 0).forEach(c -> sb.append((char) c));
        return sb.toString();
    }

    /** Uniform in {@code [0, bound)}. */
    public int below(int bound) {
        return random.nextInt(bound);
    }

    public boolean bool() {
        return random.nextBoolean();
    }

    /** True with probability {@code p}. */
    public boolean chance(double p) {
        return random.nextDouble() < p;
    }

    /** An index into {@code weights}, chosen with the given weights: {@code switch (g.frequency(6, 2, 2))}. */
    public int frequency(int... weights) {
        int total = 0;
        for (int w : weights) {
            if (w < 0) {
                throw new IllegalArgumentException("negative weight " + w);
            }
            total += w;
        }
        int r = random.nextInt(total);
        for (int i = 0; i < weights.length; i++) {
            r -= weights[i];
            if (r < 0) {
                return i;
            }
        }
        throw new AssertionError("unreachable");
    }

    /** One of the values, uniformly. */
    @SafeVarargs
    public final <T> T oneOf(T... values) {
        return values[random.nextInt(values.length)];
    }

    /** One of the values, uniformly. */
    public <T> T oneOf(List<? extends T> values) {
        return values.get(random.nextInt(values.size()));
    }

    /** Null with probability {@code pNull}, else a value of {@code gen}. */
    public <T> T nullOr(double pNull, Function<Gen, ? extends T> gen) {
        return chance(pNull) ? null : gen.apply(this);
    }

    /** A value of {@code gen} that passes {@code accept}; fails after 1000 refused values. */
    public <T> T until(Predicate<? super T> accept, Function<Gen, ? extends T> gen) {
        for (int i = 0; i < 1000; i++) {
            T value = gen.apply(this);
            if (accept.test(value)) {
                return value;
            }
        }
        throw new IllegalStateException("1000 generated values in a row refused: the filter is too strict");
    }

    /** Any int: 1 in 8 an edge value, 1 in 4 near 0 or a limit, else uniform. */
    public int anyInt() {
        return intBetween(Integer.MIN_VALUE, Integer.MAX_VALUE);
    }

    /** An int in {@code [min, max]}: 1 in 8 an edge value in range, 1 in 4 near an end or 0, else uniform. */
    public int intBetween(int min, int max) {
        return (int) longBetween(min, max);
    }

    /** Any long: 1 in 8 an edge value, 1 in 4 near 0 or a limit, else uniform. */
    public long anyLong() {
        return longBetween(Long.MIN_VALUE, Long.MAX_VALUE);
    }

    /**
     * A long in {@code [min, max]}: 1 in 8 an edge value in range (the ends and their neighbours, 0,
     * +-1, the int and long limits and their neighbours, +-2^53 and their neighbours), 1 in 4 within
     * 1024 of an end or of 0, else uniform.
     */
    public long longBetween(long min, long max) {
        if (min > max) {
            throw new IllegalArgumentException(min + " > " + max);
        }
        switch (frequency(1, 2, 5)) {
            case 0 -> {
                List<Long> edges = new ArrayList<>(List.of(min, max));
                if (min < max) {
                    edges.add(min + 1);
                    edges.add(max - 1);
                }
                for (long e : EDGE_LONGS) {
                    if (e >= min && e <= max) {
                        edges.add(e);
                    }
                }
                return oneOf(edges);
            }
            case 1 -> {
                long offset = random.nextInt(1024);
                long span = max - min; // negative: overflowed, the range is wider than any offset
                boolean fits = span < 0 || offset <= span;
                return switch (min <= 0 && max >= 0 ? below(3) : below(2)) {
                    case 0 -> fits ? min + offset : max;
                    case 1 -> fits ? max - offset : min;
                    default -> Math.clamp(offset - 512, min, max);
                };
            }
            default -> {
                if (max < Long.MAX_VALUE) {
                    return random.nextLong(min, max + 1);
                }
                return min == Long.MIN_VALUE ? random.nextLong() : random.nextLong(min - 1, max) + 1;
            }
        }
    }

    /**
     * Any double: 1 in 4 an edge value (0, -0, 1.5, 1e300, NaN, the infinities, MIN_VALUE, MAX_VALUE,
     * 2^53 and neighbours, 2^63, ...), 1 in 4 a decimal with two places within +-10^4, 1 in 4 a whole
     * number, 1 in 4 any finite double bit pattern.
     */
    public double anyDouble() {
        return switch (below(4)) {
            case 0 -> EDGE_DOUBLES[below(EDGE_DOUBLES.length)];
            case 1 -> (random.nextInt(2_000_001) - 1_000_000) / 100.0;
            case 2 -> (double) longBetween(-(1L << 54), 1L << 54);
            default -> until(Double::isFinite, g -> Double.longBitsToDouble(g.random.nextLong()));
        };
    }

    /** A size in {@code [min, max]}: 1 in 10 min, 1 in 10 max, 4 in 10 at most 8 above min, else uniform. */
    public int size(int min, int max) {
        return switch (frequency(1, 1, 4, 4)) {
            case 0 -> min;
            case 1 -> max;
            case 2 -> min + below(Math.min(max - min, 8) + 1);
            default -> min + below(max - min + 1);
        };
    }

    /** A string of {@link #size} {@code [minLength, maxLength]} chars, each uniform over {@code alphabet}. */
    public String string(int minLength, int maxLength, String alphabet) {
        int length = size(minLength, maxLength);
        StringBuilder sb = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            sb.append(alphabet.charAt(below(alphabet.length())));
        }
        return sb.toString();
    }

    /**
     * A string of any UTF-16 chars (controls, unpaired surrogates, noncharacters): each char 1 in 4
     * printable ASCII, 1 in 4 below U+0100 (C0 and C1 controls, Latin-1), 1 in 8 a surrogate, else any.
     */
    public String anyString(int minLength, int maxLength) {
        int length = size(minLength, maxLength);
        StringBuilder sb = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            sb.append((char) switch (frequency(2, 2, 1, 3)) {
                case 0 -> ' ' + below(95);
                case 1 -> below(0x100);
                case 2 -> Character.MIN_SURROGATE + below(0x800);
                default -> below(0x10000);
            });
        }
        return sb.toString();
    }

    /** {@link #size} {@code [minLength, maxLength]} bytes: half uniform, half UTF-8's edge bytes and separators. */
    public byte[] bytes(int minLength, int maxLength) {
        byte[] bytes = new byte[size(minLength, maxLength)];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = bool() ? (byte) random.nextInt(256) : UTF8_EDGE_BYTES[below(UTF8_EDGE_BYTES.length)];
        }
        return bytes;
    }

    /** A mutable list of {@link #size} {@code [min, max]} values of {@code element}. */
    public <T> List<T> list(int min, int max, Function<Gen, ? extends T> element) {
        int size = size(min, max);
        List<T> list = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            list.add(element.apply(this));
        }
        return list;
    }

    /**
     * A mutable map of about {@link #size} {@code [min, max]} entries (fewer when {@code key} repeats
     * itself; fails if it cannot reach {@code min} distinct keys). Values may be null.
     */
    public <K, V> Map<K, V> map(int min, int max, Function<Gen, ? extends K> key, Function<Gen, ? extends V> value) {
        int size = size(min, max);
        Map<K, V> map = new HashMap<>();
        for (int attempt = 0; map.size() < size && attempt < 10 * size + 10; attempt++) {
            K k = key.apply(this);
            if (!map.containsKey(k)) {
                map.put(k, value.apply(this));
            }
        }
        if (map.size() < min) {
            throw new IllegalStateException("could not generate " + min + " distinct keys");
        }
        return map;
    }
}
