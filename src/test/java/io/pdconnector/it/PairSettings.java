package io.pdconnector.it;

import static io.pdconnector.it.ServiceProcess.TARGET;

import java.io.IOException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The settings the two-process fault ITs start their P and D with: a producer with its own KV files and lease
 * state under target/, and a decoder that finds it on the static registry. Each test then puts what it varies
 * (heartbeats, timeouts, faults, addresses); later puts win.
 */
final class PairSettings {


    private PairSettings() {
    }

    static Map<String, String> producer(String engineId, String stateName, int blocks, int maxSeqs, Duration lease)
            throws IOException {
        Map<String, String> settings = new LinkedHashMap<>();
        settings.put("pd.engine-id", engineId);
        settings.put("pd.role", "producer");
        settings.put("pd.kv.num-blocks", Integer.toString(blocks));
        settings.put("pd.kv.max-num-seqs", Integer.toString(maxSeqs));
        settings.put("pd.lease.duration", lease.toMillis() + "ms");
        settings.put("pd.kv.shm-dir", TARGET.resolve("it-shm").toString());
        settings.put("pd.lease.state-dir",
                Files.createDirectories(TARGET.resolve("it-state")).resolve(stateName).toString());
        return settings;
    }

    /** {@code producer} is the host:port the static registry lists. */
    static Map<String, String> consumer(String engineId, String producer, int blocks, Duration lease) {
        Map<String, String> settings = new LinkedHashMap<>();
        settings.put("pd.engine-id", engineId);
        settings.put("pd.role", "consumer");
        settings.put("pd.kv.num-blocks", Integer.toString(blocks));
        settings.put("pd.kv.shm-dir", TARGET.resolve("it-shm").toString());
        settings.put("pd.lease.duration", lease.toMillis() + "ms");
        settings.put("pd.registry.store", "static");
        settings.put("pd.registry.static.peers", producer);
        return settings;
    }

    /** Puts the fault keys that delay this consumer's block READs by {@code delay}, each with {@code probability}. */
    static void delayBlockReads(Map<String, String> consumer, Duration delay, double probability) {
        consumer.put("pd.faults.enabled", "true");
        consumer.put("pd.faults.read-kind", "block");
        consumer.put("pd.faults.action", "delay");
        consumer.put("pd.faults.duration", delay.toMillis() + "ms");
        consumer.put("pd.faults.probability", Double.toString(probability));
    }
}
