package org.schedbridge.spark;

import java.nio.ByteBuffer;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.Pool;
import org.apache.spark.scheduler.TaskDescription;
import org.apache.spark.scheduler.TaskSetManager;
import org.apache.spark.scheduler.WorkerOffer;
import org.apache.spark.scheduler.cluster.YarnClusterScheduler;
import scala.Enumeration;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;

/**
 * Spark's YARN scheduler for a driver in the ApplicationMaster's container (cluster deploy mode; its
 * start hook tells the ApplicationMaster the SparkContext is up), with policy-driven offer rounds.
 * Same delegations as {@link BridgeYarnScheduler} (Java has single inheritance); the logic is in
 * {@link PlacementRounds}.
 */
public final class BridgeYarnClusterScheduler extends YarnClusterScheduler {
    private final PlacementRounds rounds;

    BridgeYarnClusterScheduler(SparkContext sc, PlacementRounds rounds) {
        super(sc);
        this.rounds = rounds;
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
    }

    @Override
    public void stop(int exitCode) {
        rounds.close();
        super.stop(exitCode);
    }
}
