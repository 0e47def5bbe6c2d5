package io.pdconnector.loop;

import java.util.concurrent.CompletableFuture;

/** A request to a step loop, carrying the future the loop answers it through. */
public interface LoopCommand {

    CompletableFuture<?> reply();
}
