package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Properties;
import org.apache.spark.JobArtifactSet;
import org.apache.spark.Partition;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.ResultTask;
import org.apache.spark.scheduler.SchedulingMode;
import org.apache.spark.scheduler.Task;
import org.apache.spark.scheduler.TaskLocation;
import org.apache.spark.scheduler.TaskSchedulerImpl;
import org.apache.spark.scheduler.TaskSet;
import org.apache.spark.scheduler.TaskSetManager;
import org.apache.spark.util.SystemClock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The root pool that shows Spark's own resourceOffers only the stage a grant names. Task sets
 * need a task scheduler, so this test starts a local SparkContext (no job runs on it).
 */
class FilteringPoolTest {
    private static SparkContext sc;

    @BeforeAll
    static void start() {
        sc = new SparkContext(new SparkConf().setMaster("local[1]").setAppName("FilteringPoolTest")
                .set("spark.ui.enabled", "false").set("spark.driver.host", "127.0.0.1")
                .set("spark.driver.bindAddress", "127.0.0.1"));
    }

    @AfterAll
    static void stop() {
        sc.stop();
    }

    /** A task set of one pending task of {@code stage}, in job {@code job} (FIFO's first key). */
    private static TaskSetManager taskSet(int job, int stage) {
        Partition partition = () -> 0;
        Task<?> task = new ResultTask<>(stage, 0, null, partition, 1,
                CollectionConverters.asScala(List.<TaskLocation>of()).toList(), 0, JobArtifactSet.emptyJobArtifactSet(),
                new Properties(), null, Option.empty(), Option.empty(), Option.empty(), false);
        TaskSet set = new TaskSet(new Task<?>[] {task}, stage, 0, job, new Properties(), 0, Option.empty(), false);
        return new TaskSetManager((TaskSchedulerImpl) sc.taskScheduler(), set, 1, Option.empty(), new SystemClock());
    }

    private static List<TaskSetManager> shown(FilteringPool pool) {
        return CollectionConverters.asJava(pool.getSortedTaskSetQueue());
    }

    @Test
    void showsOnlyTheGrantedStageThenEverythingAgain() {
        FilteringPool pool = new FilteringPool(SchedulingMode.FIFO());
        TaskSetManager first = taskSet(1, 10);
        TaskSetManager second = taskSet(2, 20);
        pool.addSchedulable(second);
        pool.addSchedulable(first);
        assertEquals(List.of(first, second), shown(pool), "Spark's FIFO order while not filtering");

        pool.showOnly(second);
        assertEquals(List.of(second), shown(pool));
        assertEquals(List.of(first, second), CollectionConverters.asJava(pool.sortedQueue()),
                "the plugin's own view is never filtered");

        pool.showAll();
        assertEquals(List.of(first, second), shown(pool));
    }

    @Test
    void showingNothingOrAStageNotInThePoolShowsNothing() {
        FilteringPool pool = new FilteringPool(SchedulingMode.FIFO());
        pool.addSchedulable(taskSet(1, 10));
        pool.showOnly(null);
        assertEquals(List.of(), shown(pool));
        pool.showOnly(taskSet(3, 30));
        assertEquals(List.of(), shown(pool));
    }
}
