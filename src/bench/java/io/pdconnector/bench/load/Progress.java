package io.pdconnector.bench.load;

import java.io.PrintStream;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Progress of the phase under way, on stderr (stdout keeps the figures): a bar redrawn in place on a
 * terminal, a plain line every few seconds otherwise, nothing when off. One daemon thread draws; it
 * ends with {@link #close}.
 */
public final class Progress implements AutoCloseable {

    private static final int WIDTH = 30;
    private static final long BAR_EVERY_MS = 200;
    private static final long PLAIN_EVERY_MS = 5_000;

    private final PrintStream err;
    private final boolean bar;
    private final boolean off;
    private final AtomicLong done = new AtomicLong();
    private final Thread drawer;
    private volatile String phase = "";
    private volatile long total;
    private volatile long startedAt;
    private volatile boolean closed;
    private volatile long lastPlain;

    public Progress(LoadOptions.ProgressMode mode, PrintStream err) {
        this.err = err;
        boolean terminal = System.console() != null && System.console().isTerminal();
        this.off = mode == LoadOptions.ProgressMode.OFF;
        this.bar = mode == LoadOptions.ProgressMode.BAR || mode == LoadOptions.ProgressMode.AUTO && terminal;
        this.drawer = Thread.ofPlatform().daemon().name("progress").start(this::draw);
    }

    /** A new phase of {@code total} steps. */
    public synchronized void start(String phaseName, long totalSteps) {
        finishLine();
        phase = phaseName;
        total = totalSteps;
        done.set(0);
        startedAt = System.nanoTime();
        lastPlain = startedAt;
        if (!off && !bar) {
            err.println("load: " + phaseName + ": " + totalSteps + " to do");
        }
    }

    public void tick() {
        done.incrementAndGet();
    }

    /** Ends the phase's line (the bar's last state, or a plain summary). */
    public synchronized void finishLine() {
        if (phase.isEmpty() || off) {
            phase = "";
            return;
        }
        if (bar) {
            err.print("\r" + render() + System.lineSeparator());
        } else {
            err.println("load: " + render());
        }
        err.flush();
        phase = "";
    }

    /** A message on its own line, not mangled by the bar. */
    public synchronized void note(String message) {
        if (bar && !phase.isEmpty()) {
            err.print("\r" + " ".repeat(100) + "\r");
        }
        err.println("load: " + message);
        err.flush();
    }

    String render() {
        long n = done.get();
        long t = Math.max(1, total);
        double seconds = (System.nanoTime() - startedAt) / 1e9;
        int filled = (int) Math.min(WIDTH, n * WIDTH / t);
        return String.format(Locale.ROOT, "%-28s [%s%s] %d/%d %.1f s %.0f/s", phase, "#".repeat(filled),
                ".".repeat(WIDTH - filled), n, total, seconds, seconds > 0 ? n / seconds : 0.0);
    }

    private void draw() {
        while (!closed) {
            try {
                Thread.sleep(BAR_EVERY_MS);
            } catch (InterruptedException e) {
                return;
            }
            synchronized (this) {
                if (off || phase.isEmpty()) {
                    continue;
                }
                if (bar) {
                    err.print("\r" + render());
                    err.flush();
                } else if (System.nanoTime() - lastPlain > PLAIN_EVERY_MS * 1_000_000) {
                    err.println("load: " + render());
                    lastPlain = System.nanoTime();
                }
            }
        }
    }

    @Override
    public void close() {
        finishLine();
        closed = true;
        drawer.interrupt();
    }
}
