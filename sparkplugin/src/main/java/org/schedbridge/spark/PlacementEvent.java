package org.schedbridge.spark;

import org.apache.spark.scheduler.SparkListenerEvent;

/**
 * One task launched in an offer round of the plugin, posted on Spark's listener bus: the event log
 * keeps it beside Spark's own task events (the History Server replays it unchanged), so who placed
 * each task is in Spark's record of the application, not only in the plugin's log.
 *
 * @param policy   the policy serving the application
 * @param round    the plugin's last policy round when the task launched
 * @param by       {@code POLICY} (the policy's grant or its declared Spark order), {@code FALLBACK}
 *                 (Spark's own scheduling after a failed round) or {@code UNMANAGED} (barrier or
 *                 custom-resource stages, left to Spark by design)
 * @param taskId   Spark's task id (the event log's {@code Task ID})
 * @param task     Spark's name of the attempt, e.g. {@code task 3.0 in stage 1.0 (TID 7)}
 * @param executor the executor it launched on
 */
public record PlacementEvent(String policy, long round, String by, long taskId, String task, String executor)
        implements SparkListenerEvent {
}
