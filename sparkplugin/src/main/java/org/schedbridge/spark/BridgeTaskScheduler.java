package org.schedbridge.spark;

import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.Pool;
import org.apache.spark.scheduler.TaskDescription;
import org.apache.spark.scheduler.TaskSchedulerImpl;
import org.apache.spark.scheduler.WorkerOffer;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;

/** Spark's task scheduler for local and standalone backends, with policy-driven offer rounds. */
public final class BridgeTaskScheduler extends TaskSchedulerImpl {
    private final PlacementRounds rounds;
    private FilteringPool pool;

    BridgeTaskScheduler(SparkContext sc, int maxTaskFailures, boolean isLocal, PlacementRounds rounds) {
        super(sc, maxTaskFailures, isLocal, new org.apache.spark.util.SystemClock());
        this.rounds = rounds;
    }

    @Override
    public Pool rootPool() {
        if (pool == null) {
            pool = new FilteringPool(schedulingMode());
        }
        return pool;
    }

    @Override
    public synchronized Seq<Seq<TaskDescription>> resourceOffers(IndexedSeq<WorkerOffer> offers, boolean all) {
        return rounds.offer(offers, all, pool, super::resourceOffers, () -> backend().reviveOffers());
    }

    @Override
    public void stop(int exitCode) {
        rounds.close();
        super.stop(exitCode);
    }
}
