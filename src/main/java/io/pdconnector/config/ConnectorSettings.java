package io.pdconnector.config;

import io.pdconnector.kv.KvAttention;
import io.pdconnector.kv.KvDtype;
import io.pdconnector.kv.ModelGeometry;
import java.nio.file.Path;
import java.time.Duration;

/**
 * The one place {@link PdConfig} becomes the settings records P, D and the step loops take: every key
 * is mapped here, by name through the builders, once at start-up. A new {@code pd.*} key is a method
 * in {@link PdConfig}, a builder call here, and a row in docs/configuration.md.
 */
public record ConnectorSettings(ModelGeometry geometry, ProducerConfig producer, ConsumerConfig consumer,
        LoopSettings loop) {

    /** {@code httpPort} is the advertised port when {@code pd.advertised-port} is unset. */
    public static ConnectorSettings from(PdConfig pd, int httpPort) {
        ModelGeometry geometry = geometry(pd.model());
        return new ConnectorSettings(geometry, producer(pd, geometry, httpPort), consumer(pd, geometry), loop(pd.loop()));
    }

    public static ModelGeometry geometry(ModelConfig m) {
        return new ModelGeometry(m.layers(), m.kvHeads(), m.headDim(), m.blockTokens(), m.dtypeBytes(),
                m.kvDtype().map(KvDtype::of).orElse(null), KvAttention.of(m.attention()), m.kvGroups().orElse(null),
                m.kvScales().orElse(null));
    }

    private static ProducerConfig producer(PdConfig pd, ModelGeometry geometry, int httpPort) {
        return ProducerConfig.builder(pd.engineId(), Path.of(pd.lease().stateDir()))
                .advertised(pd.advertisedHost(), pd.advertisedPort().orElse(httpPort))
                .tpSize(pd.tpSize())
                .geometry(geometry)
                .blocks(pd.kv().numBlocks(), pd.kv().maxNumSeqs(), pd.lease().slots())
                .kvShmDir(Path.of(pd.kv().shmDir()))
                .leaseDuration(pd.lease().duration())
                .verification(pd.lease().verification())
                .reservationTimeout(pd.lease().reservationTimeout())
                .leaseMaxLifetime(pd.lease().maxLifetime())
                .commandQueueCapacity(pd.http().queueCapacity())
                .build();
    }

    private static ConsumerConfig consumer(PdConfig pd, ModelGeometry geometry) {
        PdConfig.ConsumerSettings c = pd.consumer();
        Duration heartbeat = c.heartbeatInterval().orElse(pd.lease().duration().dividedBy(6));
        return ConsumerConfig.builder(pd.engineId())
                .tpSize(pd.tpSize())
                .geometry(geometry)
                .blocks(pd.kv().numBlocks())
                .verification(pd.lease().verification())
                .failurePolicy(c.failurePolicy())
                .heartbeatInterval(heartbeat)
                .pullTimeout(c.pullTimeout())
                .retention(c.retention())
                .slotReadSpins(c.slotReadSpins())
                .slotChecksPerRead(c.slotChecksPerRead())
                .maxPeerBlocks(c.maxPeerBlocks())
                .maxPeerDescriptors(c.maxPeerDescriptors())
                .maxPeers(c.maxPeers())
                .commandQueueCapacity(pd.http().queueCapacity())
                .kvShmDir(Path.of(pd.kv().shmDir()))
                .vramHostPathAllowed(pd.kv().vramHostPath() == VramHostPath.allow)
                .build();
    }

    private static LoopSettings loop(PdConfig.Loop l) {
        return new LoopSettings(l.openDeadline(), l.stopDeadline(), l.maxIdlePark(), l.producerIdlePark(),
                l.stallThreshold());
    }
}
