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

    /** Preferred hosts per task, computed once per task set (they never change). */
    private static final Map<TaskSetManager, String[][]> PREFERRED = new WeakHashMap<>();

    OfferBatch(String app, long round, int cpusPerTask, List<WorkerOffer> offers,
               List<TaskSetManager> queue, ClusterMirror mirror) {
        request.put("v", Protocol.VERSION).put("kind", "round").put("app", app).put("round", round)
                .put("now_ms", System.currentTimeMillis()).put("cpus_per_task", cpusPerTask);
        ArrayNode slots = request.putArray("slots");
        for (int i = 0; i < offers.size(); i++) {
            WorkerOffer o = offers.get(i);
            int free = o.cores().toInt() / cpusPerTask;
            offerIndex.put(o.executorId(), i);
            if (free > 0) {
                slots.addObject().put("executor", o.executorId()).put("host", o.host()).put("free", free);
            }
        }
        ArrayNode out = request.putArray("stages");
        for (TaskSetManager tsm : queue) {
            String key = key(tsm.stageId(), tsm.taskSet().stageAttemptId());
            stages.put(key, tsm);
            out.add(describe(tsm, mirror));
        }
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
        String[][] preferred = preferredHosts(tsm);
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
        st.set("props", BridgeListener.properties(tsm.taskSet().properties()));
        st.set("parents", mirror.parentsOf(tsm.stageId()));
        return st;
    }

    private static String[][] preferredHosts(TaskSetManager tsm) {
        synchronized (PREFERRED) {
            return PREFERRED.computeIfAbsent(tsm, t -> {
                var tasks = t.tasks();
                String[][] out = new String[tasks.length][];
                for (int i = 0; i < tasks.length; i++) {
                    List<TaskLocation> locs = CollectionConverters.asJava(tasks[i].preferredLocations());
                    out[i] = locs.stream().map(TaskLocation::host).distinct().toArray(String[]::new);
                }
                return out;
            });
        }
    }
}
