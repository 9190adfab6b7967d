package org.schedbridge.spark;

import org.apache.spark.scheduler.Pool;
import org.apache.spark.scheduler.TaskSetManager;
import scala.Enumeration;
import scala.collection.mutable.ArrayBuffer;

/**
 * The scheduler's root pool, able to show only one task set while a policy grant is applied, so
 * that Spark's own {@code resourceOffers} hands the granted slots to that stage and no other.
 */
final class FilteringPool extends Pool {
    /** While filtering, the only task set shown (null: none). Set by the offer thread only. */
    private TaskSetManager only;
    private boolean filtering;

    FilteringPool(Enumeration.Value schedulingMode) {
        super("", schedulingMode, 0, 0);
    }

    /** Spark's own order of runnable task sets (FIFO or FAIR), never filtered. */
    ArrayBuffer<TaskSetManager> sortedQueue() {
        return super.getSortedTaskSetQueue();
    }

    @Override
    public ArrayBuffer<TaskSetManager> getSortedTaskSetQueue() {
        ArrayBuffer<TaskSetManager> all = super.getSortedTaskSetQueue();
        if (!filtering) {
            return all;
        }
        ArrayBuffer<TaskSetManager> shown = new ArrayBuffer<>();
        if (only != null && all.contains(only)) {
            shown.addOne(only);
        }
        return shown;
    }

    /** Shows only {@code tsm} (or nothing when null) until {@link #showAll}. */
    void showOnly(TaskSetManager tsm) {
        only = tsm;
        filtering = true;
    }

    void showAll() {
        only = null;
        filtering = false;
    }
}
