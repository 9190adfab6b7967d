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

    /** The plugin's counters ({@link BridgeStats}): at most once a second while they change, and at the end. */
    public record Counters(long time, Map<String, Long> counters) implements SparkListenerEvent {
    }
}
