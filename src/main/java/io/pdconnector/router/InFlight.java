package io.pdconnector.router;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/** This router's legs under way, per engine id: the load the registry has not published yet. */
final class InFlight implements Load {

    private final Map<String, AtomicInteger> legs = new ConcurrentHashMap<>();

    void start(String engineId) {
        legs.computeIfAbsent(engineId, k -> new AtomicInteger()).incrementAndGet();
    }

    void end(String engineId) {
        legs.get(engineId).decrementAndGet();
    }

    @Override
    public int inFlight(String engineId) {
        AtomicInteger n = legs.get(engineId);
        return n == null ? 0 : n.get();
    }
}
