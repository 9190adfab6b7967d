package org.schedbridge.spark;

import java.util.List;
import java.util.Map;
import org.apache.spark.util.kvstore.KVIndex;

/**
 * What the {@code schedbridge} tab shows, one per application in its status store (the live
 * one, or the one the History Server rebuilds from the event log): immutable, so the page reads it
 * while the listener writes the next.
 *
 * @param counters    the plugin's counters ({@link BridgeStats}) as last posted
 * @param stages      tasks launched per stage attempt and by whom, in stage order
 * @param fallbacks   rounds left to Spark, by reason, in the order the reasons first came
 * @param preemptions the most recent preemptions the policy asked for (at most {@link #RECENT})
 * @param containers  the most recent containers suspended or resumed (at most {@link #RECENT})
 */
public record BridgeUiSummary(String policy, Map<String, String> params, String endpoint, Map<String, Long> counters,
                              List<StagePlacements> stages, List<FallbackReason> fallbacks,
                              List<BridgeEvents.Preemption> preemptions, long preemptionsDone,
                              long preemptionsRefused, List<BridgeEvents.ContainerChange> containers,
                              long suspends, long resumes, long failedContainerCommands) {
    /** The only key: one summary per application's store. */
    static final String KEY = "schedbridge";
    static final int RECENT = 100;

    @KVIndex
    public String key() {
        return KEY;
    }

    /** Tasks of one stage attempt launched by the policy, in fall-back rounds, and left to Spark by design. */
    public record StagePlacements(int stage, int attempt, long policy, long fallback, long unmanaged) {
    }

    /** How many rounds fell back for one reason, and when first and last (ms since the epoch). */
    public record FallbackReason(String reason, long rounds, long firstMs, long lastMs) {
    }
}
