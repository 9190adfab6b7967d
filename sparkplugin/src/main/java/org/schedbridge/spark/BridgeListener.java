package org.schedbridge.spark;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import org.apache.spark.scheduler.JobFailed;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerJobEnd;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.scheduler.TaskInfo;
import scala.jdk.javaapi.CollectionConverters;

/** Turns Spark's task, executor and job events into flat JSON events for the {@link ClusterMirror}. */
final class BridgeListener extends SparkListener {
    /** Job properties forwarded to the policy besides {@code schedbridge.*} ones. */
    static final String POOL = "spark.scheduler.pool";
    /**
     * What identifies a recurring job, forwarded too: its job group, tags, description and call site
     * (the policy host keys runtime estimates by them, {@code bridge.drivers.estimates}).
     */
    static final Set<String> IDENTITY = Set.of(
            "spark.jobGroup.id", "spark.job.tags", "spark.job.description", "callSite.short");
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private final ClusterMirror mirror;
    private final long executorMemoryMb;

    /** {@code executorMemoryMb}: every executor's heap, the application's {@code spark.executor.memory}. */
    BridgeListener(ClusterMirror mirror, long executorMemoryMb) {
        this.mirror = mirror;
        this.executorMemoryMb = executorMemoryMb;
    }

    private static ObjectNode event(String kind, long timeMs) {
        ObjectNode ev = NODES.objectNode();
        ev.put("e", kind).put("t", timeMs);
        return ev;
    }

    /**
     * On YARN the executor's attributes name its container and NodeManager, which the live
     * preemption driver needs to resize the container; elsewhere both are empty. Its memory is the
     * application's setting (Spark's executor info has none): the policy host packs declared task
     * demands against each executor's cores and memory.
     */
    @Override
    public void onExecutorAdded(SparkListenerExecutorAdded e) {
        Map<String, String> attrs = CollectionConverters.asJava(e.executorInfo().attributes());
        mirror.record(event("executor_added", e.time()).put("executor", e.executorId())
                .put("host", e.executorInfo().executorHost()).put("cores", e.executorInfo().totalCores())
                .put("container", attrs.getOrDefault("CONTAINER_ID", ""))
                .put("nm", attrs.getOrDefault("NM_HTTP_ADDRESS", "")).put("memory_mb", executorMemoryMb));
    }

    @Override
    public void onExecutorRemoved(SparkListenerExecutorRemoved e) {
        mirror.record(event("executor_removed", e.time()).put("executor", e.executorId())
                .put("reason", String.valueOf(e.reason())));
    }

    @Override
    public void onTaskStart(SparkListenerTaskStart e) {
        mirror.record(taskStart(e.taskInfo(), e.stageId(), e.stageAttemptId()));
    }

    /** A {@code task_start} event; also built by the scheduler for {@link ClusterMirror#recordEarlyStart}. */
    static ObjectNode taskStart(TaskInfo ti, int stage, int attempt) {
        return task(event("task_start", ti.launchTime()), stage, attempt, ti);
    }

    @Override
    public void onTaskEnd(SparkListenerTaskEnd e) {
        TaskInfo ti = e.taskInfo();
        String reason = e.reason().getClass().getSimpleName().replace("$", "");
        mirror.record(taskEnd(ti, e.stageId(), e.stageAttemptId(), ti.finishTime(), reason));
    }

    /** A {@code task_end} event; also built by the scheduler for {@link ClusterMirror#recordEarlyEnd}. */
    static ObjectNode taskEnd(TaskInfo ti, int stage, int attempt, long finishMs, String reason) {
        return task(event("task_end", finishMs), stage, attempt, ti)
                .put("duration_ms", finishMs - ti.launchTime()).put("reason", reason);
    }

    private static ObjectNode task(ObjectNode ev, int stage, int attempt, TaskInfo ti) {
        return ev.put("task", ti.taskId()).put("stage", stage).put("attempt", attempt).put("index", ti.index())
                .put("executor", ti.executorId()).put("host", ti.host()).put("speculative", ti.speculative());
    }

    @Override
    public void onJobStart(SparkListenerJobStart e) {
        ObjectNode ev = event("job_start", e.time()).put("job", e.jobId());
        ArrayNode stages = ev.putArray("stages");
        for (StageInfo si : CollectionConverters.asJava(e.stageInfos())) {
            ObjectNode st = stages.addObject().put("stage", si.stageId()).put("tasks", si.numTasks());
            ArrayNode ps = st.putArray("parents");
            for (Object p : new TreeSet<>(CollectionConverters.asJava(si.parentIds()))) {
                ps.add((Integer) p);
            }
        }
        ev.set("props", properties(e.properties()));
        mirror.record(ev);
    }

    @Override
    public void onJobEnd(SparkListenerJobEnd e) {
        mirror.record(event("job_end", e.time()).put("job", e.jobId())
                .put("ok", !(e.jobResult() instanceof JobFailed)));
    }

    /** The pool, the job's identity and every {@code schedbridge.*} local property, sorted by key. */
    static ObjectNode properties(Properties props) {
        ObjectNode out = NODES.objectNode();
        if (props == null) {
            return out;
        }
        for (String key : new TreeSet<>(props.stringPropertyNames())) {
            if (key.equals(POOL) || IDENTITY.contains(key) || key.startsWith("schedbridge.")) {
                out.put(key, props.getProperty(key));
            }
        }
        return out;
    }
}
