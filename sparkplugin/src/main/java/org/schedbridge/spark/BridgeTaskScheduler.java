package org.schedbridge.spark;

import java.nio.ByteBuffer;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.Pool;
import org.apache.spark.scheduler.TaskDescription;
import org.apache.spark.scheduler.TaskSchedulerImpl;
import org.apache.spark.scheduler.TaskSetManager;
import org.apache.spark.scheduler.WorkerOffer;
import scala.Enumeration;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;

/**
 * Spark's task scheduler for local and standalone backends, with policy-driven offer rounds.
 * Same four delegations as {@link BridgeYarnScheduler} (Java has single inheritance); the logic is in
 * {@link PlacementRounds}.
 */
public final class BridgeTaskScheduler extends TaskSchedulerImpl {
    private final PlacementRounds rounds;
    /** Local mode: its backend offers only on task events and revives (see {@link PlacementRounds#keepAlive}). */
    private final boolean local;

    BridgeTaskScheduler(SparkContext sc, int maxTaskFailures, boolean isLocal, PlacementRounds rounds) {
        super(sc, maxTaskFailures, isLocal, new org.apache.spark.util.SystemClock());
        this.rounds = rounds;
        this.local = isLocal;
    }

    @Override
    public Pool rootPool() {
        return rounds.rootPool(schedulingMode());
    }

    @Override
    public synchronized Seq<Seq<TaskDescription>> resourceOffers(IndexedSeq<WorkerOffer> offers, boolean all) {
        return rounds.offer(offers, all, super::resourceOffers, () -> backend().reviveOffers());
    }

    @Override
    public synchronized void statusUpdate(long taskId, Enumeration.Value state, ByteBuffer data) {
        TaskSetManager tsm = taskIdToTaskSetManager().get(taskId);
        super.statusUpdate(taskId, state, data);
        rounds.taskFinished(tsm, taskId, state);
    }

    @Override
    public void postStartHook() {
        super.postStartHook();
        rounds.started();
        if (local) {
            rounds.keepAlive(() -> backend().reviveOffers());
        }
    }

    @Override
    public void stop(int exitCode) {
        rounds.close();
        super.stop(exitCode);
    }
}
