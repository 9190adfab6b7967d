package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Each task's start and end reach the policy once, whether the scheduler or the listener saw it first. */
class ClusterMirrorTest {
    private static ObjectNode event(String kind, long task) {
        return JsonNodeFactory.instance.objectNode().put("e", kind).put("t", 1000 + task).put("task", task)
                .put("stage", 0).put("attempt", 0).put("index", (int) task).put("executor", "1");
    }

    private static List<String> drained(ClusterMirror mirror) {
        ObjectNode request = JsonNodeFactory.instance.objectNode();
        mirror.drainInto(request, false);
        List<String> out = new ArrayList<>();
        for (JsonNode ev : request.get("events")) {
            out.add(ev.get("e").asText() + " " + ev.get("task").asLong());
        }
        return out;
    }

    @Test
    void aStartTheListenerRecordedWhileSparkLaunchedIsNotSentAgainByTheScheduler() {
        ClusterMirror mirror = new ClusterMirror();
        mirror.record(event("task_start", 7));
        mirror.recordEarlyStart(event("task_start", 7));
        assertEquals(List.of("task_start 7"), drained(mirror));
        assertEquals("0.7", mirror.runningTask(7));
    }

    @Test
    void theListenersEventsAfterTheSchedulersAreDropped() {
        ClusterMirror mirror = new ClusterMirror();
        mirror.recordEarlyStart(event("task_start", 3));
        mirror.recordEarlyEnd(event("task_end", 3));
        mirror.record(event("task_start", 3));
        mirror.record(event("task_end", 3));
        assertEquals(List.of("task_start 3", "task_end 3"), drained(mirror));
        assertEquals(null, mirror.runningTask(3));
    }
}
