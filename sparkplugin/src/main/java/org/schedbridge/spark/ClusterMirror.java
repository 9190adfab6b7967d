package org.schedbridge.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Spark's state as the listener saw it (executors, running tasks, active jobs) plus the events not
 * yet sent. Events go out in batches with the next offer round; after a reconnect or a failed
 * round the whole state goes out instead, so a (re)started policy host rebuilds from Spark's truth.
 */
final class ClusterMirror {
    /** Beyond this many unsent events the buffer is dropped and a snapshot is sent instead. */
    private static final int MAX_PENDING = 50_000;
    /** Bound on tasks the scheduler reported and the listener has not confirmed yet (per kind). */
    private static final int MAX_EARLY = 100_000;
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private final Map<String, ObjectNode> executors = new LinkedHashMap<>();
    private final Map<Long, ObjectNode> running = new LinkedHashMap<>();
    private final Map<Integer, ObjectNode> jobs = new LinkedHashMap<>();
    private final Map<Integer, ArrayNode> parents = new LinkedHashMap<>();
    /** Task ids sent by {@link #recordEarlyStart} / {@link #recordEarlyEnd}: the listener's own events are dropped. */
    private final Set<Long> startedEarly = new LinkedHashSet<>();
    private final Set<Long> endedEarly = new LinkedHashSet<>();
    /** Jobs whose start the listener recorded, or that {@link #awaitJobs} stopped waiting for. */
    private final Set<Integer> heardJobs = new LinkedHashSet<>();
    private ArrayNode pending = NODES.arrayNode();
    private boolean overflowed;

    /** Applies one listener event (see {@link BridgeListener} for the shapes) and queues it. */
    synchronized void record(ObjectNode ev) {
        switch (ev.get("e").asText()) {
            case "executor_added" -> executors.put(ev.get("executor").asText(), ev);
            case "executor_removed" -> executors.remove(ev.get("executor").asText());
            case "task_start" -> {
                long task = ev.get("task").asLong();
                if (startedEarly.remove(task) | endedEarly.contains(task)) {
                    return;  // already sent, or a short task whose end the scheduler already reported
                }
                running.put(task, ev);
            }
            case "task_end" -> {
                if (endedEarly.remove(ev.get("task").asLong())) {
                    return;  // already sent by recordEarlyEnd
                }
                running.remove(ev.get("task").asLong());
            }
            case "job_start" -> startJob(ev);
            case "job_end" -> endJob(ev.get("job").asInt());
            default -> throw new IllegalArgumentException("unknown event " + ev);
        }
        queue(ev);
    }

    /**
     * A task end as the scheduler learns it ({@code statusUpdate}), before the listener bus
     * delivers it: the offer round that the freed slot triggers must already show the slot free
     * to the policy, else the policy declines it and the slot idles until a later revive. The
     * listener's own start and end events for this task are then dropped.
     */
    synchronized void recordEarlyEnd(ObjectNode ev) {
        long task = ev.get("task").asLong();
        running.remove(task);
        remember(endedEarly, task);
        queue(ev);
    }

    /**
     * A task start as the scheduler launches it for a policy grant, before the listener bus
     * delivers it: else a round soon after (a revive) shows the policy the slot still free. Spark
     * posts the listener's start while launching, so the listener may have recorded it already:
     * then it is not sent twice.
     */
    synchronized void recordEarlyStart(ObjectNode ev) {
        long task = ev.get("task").asLong();
        if (running.putIfAbsent(task, ev) != null) {
            return;
        }
        remember(startedEarly, task);
        queue(ev);
    }

    private static <T> void remember(Set<T> early, T id) {
        early.add(id);
        if (early.size() > MAX_EARLY) {  // the bus dropped events, or a long application's old jobs: forget the oldest
            Iterator<T> oldest = early.iterator();
            oldest.next();
            oldest.remove();
        }
    }

    private void queue(ObjectNode ev) {
        if (pending.size() >= MAX_PENDING) {
            pending = NODES.arrayNode();
            overflowed = true;
        }
        pending.add(ev);
    }

    private void startJob(ObjectNode ev) {
        jobs.put(ev.get("job").asInt(), ev);
        for (JsonNode st : ev.get("stages")) {
            parents.put(st.get("stage").asInt(), (ArrayNode) st.get("parents"));
        }
        remember(heardJobs, ev.get("job").asInt());
        notifyAll();
    }

    /**
     * Waits up to {@code maxMs} until the listener has recorded the start of each of {@code jobs}.
     * Spark posts a job's start before it submits the job's first stages, but the listener bus
     * delivers it on its own thread: a round built at once would name those stages without their
     * job's DAG (parents, and the stages after them that dependency-aware policies rank by).
     * Returns the jobs still unheard at the bound (the bus dropped or delays them); they count as
     * heard from then on, so no later round waits for them again.
     */
    synchronized List<Integer> awaitJobs(Collection<Integer> jobs, long maxMs) {
        long until = System.nanoTime() + maxMs * 1_000_000;
        List<Integer> unheard = unheard(jobs);
        try {
            for (long left = maxMs; !unheard.isEmpty() && left > 0; left = (until - System.nanoTime()) / 1_000_000) {
                wait(left);
                unheard = unheard(jobs);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (int job : unheard) {
            remember(heardJobs, job);
        }
        return unheard;
    }

    private List<Integer> unheard(Collection<Integer> jobs) {
        List<Integer> out = new ArrayList<>();
        for (int job : jobs) {
            if (!heardJobs.contains(job) && !out.contains(job)) {
                out.add(job);
            }
        }
        return out;
    }

    private void endJob(int job) {
        ObjectNode ev = jobs.remove(job);
        if (ev != null) {
            for (JsonNode st : ev.get("stages")) {
                parents.remove(st.get("stage").asInt());
            }
        }
    }

    /** True if events wait to be sent. */
    synchronized boolean hasPending() {
        return pending.size() > 0 || overflowed;
    }

    /** Parent stage ids of a stage of an active job (empty if unknown). */
    synchronized ArrayNode parentsOf(int stage) {
        ArrayNode p = parents.get(stage);
        return p == null ? NODES.arrayNode() : p;
    }

    /**
     * Moves the unsent events into {@code request.events}; with {@code snapshot} (or after an
     * overflow) puts the full state into {@code request.snapshot} instead.
     */
    synchronized void drainInto(ObjectNode request, boolean snapshot) {
        if (snapshot || overflowed) {
            ObjectNode snap = request.putObject("snapshot");
            snap.putArray("executors").addAll(executors.values());
            snap.putArray("running").addAll(running.values());
            snap.putArray("jobs").addAll(jobs.values());
            request.putArray("events");
        } else {
            request.set("events", pending);
        }
        pending = NODES.arrayNode();
        overflowed = false;
    }

    /**
     * {@code stage.index} of a running task attempt (the task whatever its attempt), or null if the
     * listener does not list it as running (a stale preemption).
     */
    synchronized String runningTask(long taskId) {
        ObjectNode ev = running.get(taskId);
        return ev == null ? null : ev.path("stage").asInt() + "." + ev.path("index").asInt();
    }
}
