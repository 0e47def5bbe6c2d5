package io.pdconnector.loop;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.IntFunction;

/** Opening a loop's per-rank resources all or nothing. */
public final class Resources {

    private Resources() {
    }

    /**
     * Opens {@code count} resources in order; if one fails, closes those already open (in reverse)
     * and rethrows, so a loop that fails to open holds nothing.
     */
    public static <T> List<T> openAll(int count, IntFunction<T> open, Consumer<T> close) {
        List<T> opened = new ArrayList<>(count);
        try {
            for (int i = 0; i < count; i++) {
                opened.add(open.apply(i));
            }
            return opened;
        } catch (RuntimeException e) {
            for (int i = opened.size() - 1; i >= 0; i--) {
                try {
                    close.accept(opened.get(i));
                } catch (RuntimeException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw e;
        }
    }
}
