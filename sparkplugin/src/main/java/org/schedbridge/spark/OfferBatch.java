package org.schedbridge.spark;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.WeakHashMap;
import org.apache.spark.scheduler.TaskLocation;
import org.apache.spark.scheduler.TaskSetManager;
import org.apache.spark.scheduler.WorkerOffer;
import scala.jdk.javaapi.CollectionConverters;

/**
 * One offer round as a compact request: free slots per executor and, per runnable stage, its job,
 * pending count, locality preferences (pending tasks per preferred host), job properties and DAG
 * parents. Keeps the lookups needed to turn the reply's grants back into offers and task sets.
 */
final class OfferBatch {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    final ObjectNode request = NODES.objectNode();
    final Map<String, TaskSetManager> stages = new HashMap<>();
    final Map<String, Integer> offerIndex = new HashMap<>();

    /**
     * What never changes in a task set, read once: each task's preferred hosts and the job's
     * properties (shared by every request about it, so never modified once built).
     */
    private record Fixed(String[][] preferred, ObjectNode props) {
    }

    private static final Map<TaskSetManager, Fixed> FIXED = new WeakHashMap<>();

    /**
     * {@code freeCores}: each offer's cores still free, where a round launched some before this
     * batch (a round that launched ahead); null: the offers' own. {@code ahead}: the plugin launches ahead of
     * the policy's answer on the reply's predictions, so the host sends them.
     */
    OfferBatch(String app, long round, int cpusPerTask, List<WorkerOffer> offers, int[] freeCores,
               List<TaskSetManager> queue, ClusterMirror mirror, boolean ahead) {
        request.put("v", Protocol.VERSION).put("kind", "round").put("app", app).put("round", round)
                .put("now_ms", System.currentTimeMillis()).put("cpus_per_task", cpusPerTask);
        if (ahead) {
            request.put("ahead", true);
        }
        ArrayNode slots = request.putArray("slots");
        offerIndex.putAll(indexOf(offers));
        for (int i = 0; i < offers.size(); i++) {
            WorkerOffer o = offers.get(i);
            int free = (freeCores == null ? o.cores().toInt() : freeCores[i]) / cpusPerTask;
            if (free > 0) {
                slots.addObject().put("executor", o.executorId()).put("host", o.host()).put("free", free);
            }
        }
        ArrayNode out = request.putArray("stages");
        stages.putAll(byKey(queue));
        for (TaskSetManager tsm : queue) {
            out.add(describe(tsm, mirror));
        }
    }

    /** The runnable stages by {@link #key}. */
    static Map<String, TaskSetManager> byKey(List<TaskSetManager> queue) {
        Map<String, TaskSetManager> out = new HashMap<>();
        for (TaskSetManager tsm : queue) {
            out.put(key(tsm.stageId(), tsm.taskSet().stageAttemptId()), tsm);
        }
        return out;
    }

    /** Each offer's position by its executor id. */
    static Map<String, Integer> indexOf(List<WorkerOffer> offers) {
        Map<String, Integer> out = new HashMap<>();
        for (int i = 0; i < offers.size(); i++) {
            out.put(offers.get(i).executorId(), i);
        }
        return out;
    }

    static String key(int stage, int attempt) {
        return stage + "." + attempt;
    }

    private static ObjectNode describe(TaskSetManager tsm, ClusterMirror mirror) {
        ObjectNode st = NODES.objectNode();
        st.put("stage", tsm.stageId()).put("attempt", tsm.taskSet().stageAttemptId())
                .put("job", tsm.taskSet().priority()).put("tasks", tsm.numTasks())
                .put("running", tsm.runningTasks());
        boolean[] done = tsm.successful();
        int[] copies = tsm.copiesRunning();
        Fixed fixed = fixed(tsm);
        String[][] preferred = fixed.preferred();
        Map<String, Integer> locality = new TreeMap<>();
        int pending = 0;
        for (int i = 0; i < done.length; i++) {
            if (!done[i] && copies[i] == 0) {
                pending++;
                for (String h : preferred[i]) {
                    locality.merge(h, 1, Integer::sum);
                }
            }
        }
        st.put("pending", pending);
        ObjectNode loc = st.putObject("locality");
        locality.forEach(loc::put);
        st.set("props", fixed.props());
        st.set("parents", mirror.parentsOf(tsm.stageId()));
        return st;
    }

    private static Fixed fixed(TaskSetManager tsm) {
        synchronized (FIXED) {
            return FIXED.computeIfAbsent(tsm, t -> {
                var tasks = t.tasks();
                String[][] preferred = new String[tasks.length][];
                for (int i = 0; i < tasks.length; i++) {
                    List<TaskLocation> locs = CollectionConverters.asJava(tasks[i].preferredLocations());
                    preferred[i] = locs.stream().map(TaskLocation::host).distinct().toArray(String[]::new);
                }
                return new Fixed(preferred, BridgeListener.properties(t.taskSet().properties()));
            });
        }
    }
}
