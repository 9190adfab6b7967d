package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Each task's start and end reach the policy once, whether the scheduler or the listener saw it first;
 * a round waits (bounded) for the start of the jobs whose stages it names.
 */
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

    private static ObjectNode jobStart(int job, int stage) {
        ObjectNode ev = JsonNodeFactory.instance.objectNode().put("e", "job_start").put("t", 1000).put("job", job);
        ev.putArray("stages").addObject().put("stage", stage).put("tasks", 2).putArray("parents").add(stage - 1);
        ev.putObject("props");
        return ev;
    }

    @Test
    void aRoundWaitsForAJobStartTheListenerDeliversLate() throws InterruptedException {
        ClusterMirror mirror = new ClusterMirror();
        mirror.record(jobStart(0, 1));
        Thread listener = new Thread(() -> {
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                return;
            }
            mirror.record(jobStart(1, 4));
        });
        listener.start();
        long start = System.nanoTime();
        assertEquals(List.of(), mirror.awaitJobs(List.of(0, 1, 1), 10_000));
        assertTrue(System.nanoTime() - start < 5_000_000_000L, "woken by the start, not by the bound");
        listener.join();
        assertEquals("[3]", mirror.parentsOf(4).toString());
    }

    @Test
    void aJobStartThatNeverComesIsWaitedForOnceThenReported() {
        ClusterMirror mirror = new ClusterMirror();
        long start = System.nanoTime();
        assertEquals(List.of(5), mirror.awaitJobs(List.of(5), 30));
        assertTrue(System.nanoTime() - start >= 30_000_000L, "waited the bound");
        assertEquals(List.of(), mirror.awaitJobs(List.of(5), 10_000));  // not again
    }
}
