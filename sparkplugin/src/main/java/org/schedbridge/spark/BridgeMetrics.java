package org.schedbridge.spark;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import org.apache.spark.metrics.source.Source;

/**
 * The plugin's counters as a source of Spark's metrics system ({@code <app>.driver.schedbridge.*}),
 * so the sinks operators already run (Prometheus servlet, JMX, CSV, Graphite) carry them: every
 * counter of {@link BridgeStats} as a gauge, and the policy call and whole-round latencies (µs) as
 * histograms.
 */
final class BridgeMetrics implements Source {
    static final String NAME = "schedbridge";
    private final MetricRegistry registry = new MetricRegistry();

    BridgeMetrics(BridgeStats stats) {
        for (String key : stats.numbers().keySet()) {
            registry.register(key, (Gauge<Long>) () -> stats.counters().get(key).asLong());
        }
        registry.register("call_latency_us", stats.callLatency);
        registry.register("round_latency_us", stats.roundLatency);
    }

    @Override
    public String sourceName() {
        return NAME;
    }

    @Override
    public MetricRegistry metricRegistry() {
        return registry;
    }
}
