package io.pdconnector.loop;

/**
 * What a step loop reports about its own steps, for metrics. Called on the loop thread, so an
 * implementation must be cheap and must not block.
 */
public interface StepObserver {

    /** One step of a loop that did work took {@code nanos}. */
    default void step(String loop, long nanos) {
    }
}
