package io.pdconnector.bench.load;

import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What {@code bench/run load} was asked to do. {@link #parse} refuses anything it does not know,
 * any value out of range and any address outside 127.0.0.0/8, naming the option.
 */
public record LoadOptions(
        URI producer,
        URI consumer,
        int requests,
        Duration maxSeconds,
        List<Integer> concurrency,
        List<TokenDistribution> tokens,
        Api api,
        Release release,
        boolean prefillAhead,
        int maxTokens,
        boolean compareVerification,
        int rounds,
        boolean rawRead,
        int rawReads,
        boolean verification,
        int warmup,
        int trivialRequests,
        Duration httpTimeout,
        Path out,
        PlotFormat plot,
        ProgressMode progress,
        long seed) {

    public static final int MAX_REQUESTS = 10_000_000;
    public static final int MAX_CONCURRENCY = 1024;
    public static final int MAX_SECONDS = 86_400;

    /** Which HTTP API the requests go through. */
    public enum Api { NATIVE, OPENAI }

    /** How a native request releases D's blocks after a received pull. */
    public enum Release { DELETE, KV }

    public enum PlotFormat { PNG, SVG }

    public enum ProgressMode { AUTO, BAR, PLAIN, OFF }

    public static final String USAGE = """
            usage: bench/run load [options]
              --producer URL --consumer URL   target running services (127.0.0.0/8 only); default: start
                                              1 P + 1 D from target/quarkus-app/quarkus-run.jar
              --requests N          measured requests per row (default 500)
              --max-seconds S       time bound of one row's requests (shared by its chunks with --compare),
                                    and of its raw READs (default 60)
              --concurrency LIST    clients in flight, one row each (default 1,16,64)
              --tokens LIST         prompt lengths: N fixed or MIN:MAX uniform, one row each (default 32)
              --api native|openai   native: prefill, pull, release; openai: /v1/completions legs (default native)
              --release delete|kv   native: DELETE D's request, or GET its KV (default delete)
              --prefill inline|ahead
                                    inline: each client prefills, pulls, releases in a row; ahead: batches of
                                    2 x concurrency prefilled first, then pulled with exactly that many pulls
                                    in flight, the rate over the pull phases only (default inline)
              --max-tokens N        openai: tokens D decodes (default 1)
              --verification on|off lease verification of the started fleet (default on)
              --compare verification  two P+D pairs, verification on and off, chunks interleaved; prints ratios
              --rounds N            chunks per row and pair with --compare (default 4)
              --raw-read            also READ the same blocks of P with a raw NIXL agent in this process, and
                                    time an HTTP round trip to GET /v1/status; prints the ratios
              --raw-reads N         measured raw READs per row and pair (default 2000)
              --warmup N            unrecorded requests per pair before the first row, shared by the prompt
                                    lengths (default 4000: the services' hot paths are JIT-compiled only after
                                    thousands of calls; with 300 a 2-block pull measured 4.3 ms p50, warm 0.9)
              --trivial-requests N  GET /v1/status round trips timed per row with --raw-read (default 200)
              --http-timeout S      deadline of one HTTP call (default 30)
              --out DIR             JSON result and plot (default target/load)
              --plot png|svg        (default png)
              --progress auto|bar|plain|off  (default auto: a bar on a terminal, lines otherwise)
              --seed N              prompts (default 1)
            """;

    public LoadOptions {
        concurrency = List.copyOf(concurrency);
        tokens = List.copyOf(tokens);
    }

    public boolean startsFleet() {
        return producer == null;
    }

    /** The biggest concurrency of the run. */
    public int maxConcurrency() {
        return concurrency.stream().mapToInt(Integer::intValue).max().orElseThrow();
    }

    /** The most blocks one prompt of the run takes. */
    public int maxBlocks(int blockTokens) {
        return tokens.stream().mapToInt(t -> t.maxBlocks(blockTokens)).max().orElseThrow();
    }

    public static LoadOptions defaults() {
        return parse(new String[0]);
    }

    public static LoadOptions parse(String[] args) {
        URI producer = null;
        URI consumer = null;
        int requests = 500;
        int maxSeconds = 60;
        List<Integer> concurrency = List.of(1, 16, 64);
        List<TokenDistribution> tokens = List.of(TokenDistribution.parse("32"));
        Api api = Api.NATIVE;
        Release release = Release.DELETE;
        boolean ahead = false;
        int maxTokens = 1;
        boolean compare = false;
        int rounds = 4;
        boolean rawRead = false;
        int rawReads = 2000;
        boolean verification = true;
        int warmup = 4000;
        int trivial = 200;
        int httpTimeout = 30;
        Path out = Path.of("target", "load");
        PlotFormat plot = PlotFormat.PNG;
        ProgressMode progress = ProgressMode.AUTO;
        long seed = 1;
        for (int i = 0; i < args.length; i++) {
            String option = args[i];
            String value = null;
            int eq = option.indexOf('=');
            if (option.startsWith("--") && eq > 0) {
                value = option.substring(eq + 1);
                option = option.substring(0, eq);
            }
            if (option.equals("--raw-read")) {
                rawRead = true;
                continue;
            }
            if (option.equals("--help") || option.equals("-h")) {
                throw new IllegalArgumentException("help");
            }
            if (value == null) {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(option + " needs a value");
                }
                value = args[++i];
            }
            switch (option) {
                case "--producer" -> producer = loopback(option, value);
                case "--consumer" -> consumer = loopback(option, value);
                case "--requests" -> requests = intIn(option, value, 1, MAX_REQUESTS);
                case "--max-seconds" -> maxSeconds = intIn(option, value, 1, MAX_SECONDS);
                case "--concurrency" -> concurrency = intList(option, value, 1, MAX_CONCURRENCY);
                case "--tokens" -> tokens = tokenList(value);
                case "--api" -> api = choice(option, value, Api.class);
                case "--release" -> release = choice(option, value, Release.class);
                case "--prefill" -> ahead = switch (value) {
                    case "inline" -> false;
                    case "ahead" -> true;
                    default -> throw new IllegalArgumentException(option + " takes inline or ahead, got '" + value
                            + "'");
                };
                case "--max-tokens" -> maxTokens = intIn(option, value, 1, 4096);
                case "--verification" -> verification = onOff(option, value);
                case "--compare" -> {
                    if (!value.equals("verification")) {
                        throw new IllegalArgumentException("--compare knows only 'verification', got '" + value + "'");
                    }
                    compare = true;
                }
                case "--rounds" -> rounds = intIn(option, value, 1, 1000);
                case "--raw-reads" -> rawReads = intIn(option, value, 1, MAX_REQUESTS);
                case "--warmup" -> warmup = intIn(option, value, 0, MAX_REQUESTS);
                case "--trivial-requests" -> trivial = intIn(option, value, 1, MAX_REQUESTS);
                case "--http-timeout" -> httpTimeout = intIn(option, value, 1, 3600);
                case "--out" -> out = Path.of(value);
                case "--plot" -> plot = choice(option, value, PlotFormat.class);
                case "--progress" -> progress = choice(option, value, ProgressMode.class);
                case "--seed" -> seed = longOf(option, value);
                default -> throw new IllegalArgumentException("unknown option " + option);
            }
        }
        if ((producer == null) != (consumer == null)) {
            throw new IllegalArgumentException("--producer and --consumer go together (or neither: start a fleet)");
        }
        if (compare && producer != null) {
            throw new IllegalArgumentException("--compare verification starts its own two P+D pairs; drop --producer"
                    + " and --consumer");
        }
        if (rounds > requests) {
            throw new IllegalArgumentException("--rounds " + rounds + " is more than --requests " + requests);
        }
        return new LoadOptions(producer, consumer, requests, Duration.ofSeconds(maxSeconds), concurrency, tokens, api,
                release, ahead, maxTokens, compare, compare ? rounds : 1, rawRead, rawReads, verification, warmup, trivial,
                Duration.ofSeconds(httpTimeout), out, plot, progress, seed);
    }

    /** An http:// URL whose host is in 127.0.0.0/8 (a name must resolve only there), without a path. */
    static URI loopback(String option, String value) {
        URI uri;
        try {
            uri = URI.create(value.endsWith("/") ? value.substring(0, value.length() - 1) : value);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(option + ": not a URL: " + value, e);
        }
        if (!"http".equals(uri.getScheme()) || uri.getHost() == null || uri.getPort() < 1
                || uri.getRawPath() != null && !uri.getRawPath().isEmpty() || uri.getRawQuery() != null) {
            throw new IllegalArgumentException(option + " takes http://HOST:PORT, got " + value);
        }
        try {
            InetAddress[] all = InetAddress.getAllByName(uri.getHost());
            for (InetAddress a : all) {
                byte[] b = a.getAddress();
                if (b.length != 4 || b[0] != 127) {
                    throw new IllegalArgumentException(option + ": " + uri.getHost() + " is " + a.getHostAddress()
                            + "; load goes to 127.0.0.0/8 only");
                }
            }
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException(option + ": unknown host " + uri.getHost(), e);
        }
        return uri;
    }

    static int intIn(String option, String value, int min, int max) {
        long v = longOf(option, value);
        if (v < min || v > max) {
            throw new IllegalArgumentException(option + " must be in [" + min + ", " + max + "], got " + value);
        }
        return (int) v;
    }

    private static long longOf(String option, String value) {
        try {
            return Long.parseLong(value.strip().replace("_", ""));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " takes a number, got '" + value + "'", e);
        }
    }

    static List<Integer> intList(String option, String value, int min, int max) {
        List<Integer> out = new ArrayList<>();
        for (String part : value.split(",")) {
            out.add(intIn(option, part, min, max));
        }
        return out;
    }

    private static List<TokenDistribution> tokenList(String value) {
        List<TokenDistribution> out = new ArrayList<>();
        for (String part : value.split(",")) {
            out.add(TokenDistribution.parse(part));
        }
        return out;
    }

    private static boolean onOff(String option, String value) {
        return switch (value) {
            case "on", "true" -> true;
            case "off", "false" -> false;
            default -> throw new IllegalArgumentException(option + " takes on or off, got '" + value + "'");
        };
    }

    private static <E extends Enum<E>> E choice(String option, String value, Class<E> type) {
        try {
            return Enum.valueOf(type, value.strip().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(option + " takes one of " + List.of(type.getEnumConstants()).toString()
                    .toLowerCase(Locale.ROOT) + ", got '" + value + "'", e);
        }
    }
}
