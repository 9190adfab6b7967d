package org.schedbridge.spark;

import java.util.Map;
import org.apache.spark.scheduler.SparkListenerEvent;

/**
 * What the plugin did, posted on Spark's listener bus beside {@link PlacementEvent}: the event log
 * keeps them, so the {@code schedbridge} tab of the History Server ({@link BridgeHistoryPlugin})
 * shows a finished application as the live UI showed it running.
 */
public final class BridgeEvents {
    private BridgeEvents() {
    }

    /** The application's policy, its parameters and the host serving it, when the scheduler starts. */
    public record PolicyStart(long time, String policy, Map<String, String> params, String endpoint)
            implements SparkListenerEvent {
    }

    /** A round left to Spark's own scheduling, and why (the host failed, or the watchdog). */
    public record Fallback(long time, String reason) implements SparkListenerEvent {
    }

    /**
     * A running task attempt the policy asked to preempt: killed ({@code done}), or refused by the
     * plugin's bounds on kills per round and per task.
     *
     * @param task the attempt's task, {@code stage.index}
     */
    public record Preemption(long time, long taskId, String task, boolean done) implements SparkListenerEvent {
    }

    /**
     * A container of one of the application's executors that the policy's node side suspended
     * (shrunk to the minimum share, or frozen) or resumed through its node agent; {@code ok}: the
     * agent applied it. Told by the host with its next reply, so {@code time} is when the plugin heard.
     */
    public record ContainerChange(long time, String executor, String container, boolean suspend, boolean ok)
            implements SparkListenerEvent {
    }

    /** The plugin's counters ({@link BridgeStats}): at most once a second while they change, and at the end. */
    public record Counters(long time, Map<String, Long> counters) implements SparkListenerEvent {
    }
}
