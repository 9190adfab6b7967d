package org.schedbridge.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.Pool;
import org.apache.spark.TaskState;
import org.apache.spark.scheduler.TaskDescription;
import org.apache.spark.scheduler.TaskInfo;
import org.apache.spark.scheduler.TaskSetManager;
import org.apache.spark.scheduler.WorkerOffer;
import scala.Enumeration;
import scala.Option;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.math.BigDecimal$;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The policy-driven {@code resourceOffers}: one batch to the policy per offer round, then each
 * granted stage is offered exactly its granted slots through Spark's own {@code resourceOffers},
 * with the root pool showing only that stage. Spark's TaskSetManager still picks the task, so
 * locality, retries and speculation stay Spark's. Any failure: the round is Spark's alone.
 */
final class PlacementRounds implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PlacementRounds.class);
    /** Spark's own {@code TaskSchedulerImpl.resourceOffers} (the scheduler's super call). */
    interface SparkOffers {
        Seq<Seq<TaskDescription>> resourceOffers(IndexedSeq<WorkerOffer> offers, boolean isAllFreeResources);
    }

    /** Without runnable stages, unsent events are still flushed to the policy this often. */
    private static final long IDLE_FLUSH_MS = 1000;
    /**
     * After a reply declaring Spark's own order, rounds with the same stages and executors are
     * Spark's for at most this long; then the policy is asked again (and gets the events since).
     */
    private static final long SPARK_ORDER_MS = 100;

    private final SparkContext sc;
    private final PolicyClient client;
    private final ClusterMirror mirror;
    private final BridgeStats stats;
    private final int cpusPerTask;
    private final ScheduledExecutorService timer =
            Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("schedbridge-timer"));
    private FilteringPool pool;
    private final AtomicBoolean reviveScheduled = new AtomicBoolean();
    private final int reviveMs;
    /** A round past the late limit is due: set while one is scheduled (a call may never answer). */
    private final AtomicBoolean lateCheckScheduled = new AtomicBoolean();
    private final int lateLimitMs;
    private final String statsFile;
    /** Free slots held back while tasks wait longer than this: one round is Spark's (the watchdog). */
    private final long holdMaxMs;
    /** Since when every policy round has held free slots back while tasks waited; -1 if the last did not. */
    private long heldSinceMs = -1;
    private final int maxKillsPerRound;
    private final int maxKillsPerTask;
    /** Kills asked by the policy so far, per task ({@code stage.index}) over all its attempts. */
    private final Map<String, Integer> kills = new HashMap<>();
    private long round;
    private final String policy;
    private long lastRoundMs;
    /** Stage keys and executors of the last round whose reply declared Spark's order; null if none. */
    private Set<String> sparkOrderStages;
    private Set<String> sparkOrderExecutors;
    /** Task ids launched per grant in the last policy round, reported with the next request. */
    private ArrayNode launchedReport = JsonNodeFactory.instance.arrayNode();

    PlacementRounds(SparkContext sc, BridgeConf conf, PolicyClient client, ClusterMirror mirror, BridgeStats stats) {
        this.sc = sc;
        this.client = client;
        this.mirror = mirror;
        this.stats = stats;
        this.cpusPerTask = sc.conf().getInt("spark.task.cpus", 1);
        this.reviveMs = conf.reviveMs;
        this.lateLimitMs = conf.lateLimitMs;
        this.statsFile = conf.statsFile;
        this.maxKillsPerRound = conf.maxKillsPerRound;
        this.holdMaxMs = conf.holdMaxMs;
        this.maxKillsPerTask = conf.maxKillsPerTask;
        this.policy = conf.policy;
    }

    /**
     * One offer round. {@code revive} asks the backend for a new round: used when the policy held
     * slots back, since local and standalone backends only offer again when a task ends.
     */
    Seq<Seq<TaskDescription>> offer(IndexedSeq<WorkerOffer> offers, boolean all, SparkOffers spark,
                                    Runnable revive) {
        stats.publish(false);
        List<WorkerOffer> list = CollectionConverters.asJava(offers);
        List<TaskSetManager> queue = CollectionConverters.asJava(pool.sortedQueue());
        if (sc.applicationId() == null) {
            return spark.resourceOffers(offers, all);  // not registered yet: no tasks to place
        }
        if (queue.isEmpty()) {
            if (mirror.hasPending() && System.currentTimeMillis() - lastRoundMs >= IDLE_FLUSH_MS) {
                ask(newBatch(list, queue), null);
            }
            return spark.resourceOffers(offers, all);
        }
        if (!policyCanPlace(list, queue)) {
            return counted(BridgeStats.Launch.UNMANAGED, spark.resourceOffers(offers, all));
        }
        if (sparkOrderHolds(list, queue)) {
            stats.sparkOrderRound();
            return counted(BridgeStats.Launch.POLICY, spark.resourceOffers(offers, all));  // the policy's declared answer
        }
        if (heldSinceMs >= 0 && System.currentTimeMillis() - heldSinceMs > holdMaxMs) {
            heldSinceMs = -1;  // the watchdog: this round is Spark's own, then the policy again
            stats.watchdogRound(holdMaxMs);
            return counted(BridgeStats.Launch.FALLBACK, spark.resourceOffers(offers, all));
        }
        long start = System.nanoTime();
        OfferBatch batch = newBatch(list, queue);
        if (batch.request.get("slots").isEmpty()) {
            reportLaunches(batch);
            return spark.resourceOffers(offers, all);
        }
        PolicyClient.Answer answer = ask(batch, revive);
        if (answer.late()) {
            offerPastTheLateLimit(revive);
            return launchNothing(offers, all, spark);
        }
        if (answer.failed()) {
            return counted(BridgeStats.Launch.FALLBACK, spark.resourceOffers(offers, all));
        }
        Placement placement = new Placement(answer.reply());
        if (placement.sparkOrder) {
            sparkOrderStages = new HashSet<>(batch.stages.keySet());
            sparkOrderExecutors = new HashSet<>(batch.offerIndex.keySet());
        }
        fromNodes(placement);
        Seq<Seq<TaskDescription>> launched = counted(BridgeStats.Launch.POLICY,
                apply(placement, batch, list, offers, all, spark));
        if (heldBack(batch, launched)) {
            stats.heldBack();
            heldSinceMs = heldSinceMs < 0 ? System.currentTimeMillis() : heldSinceMs;
            reviveLater(revive);
        } else {
            heldSinceMs = -1;
            if (size(launched) > 0 && client.wantsLaunchReports()) {
                reviveLater(revive);  // the launches reach the policy soon even if no slot frees up
            }
        }
        stats.roundDone((System.nanoTime() - start) / 1000);
        return launched;
    }

    /**
     * Reports a successful task's end to the mirror as soon as the scheduler knows it, ahead of the
     * listener bus (see {@link ClusterMirror#recordEarlyEnd}); {@code tsm} is the task's set, looked
     * up before Spark's {@code statusUpdate} forgets it. Failures and kills keep the listener's
     * event, which names the precise reason.
     */
    void taskFinished(TaskSetManager tsm, long taskId, Enumeration.Value state) {
        if (tsm == null || state != TaskState.FINISHED()) {
            return;
        }
        Option<TaskInfo> info = tsm.taskInfos().get(taskId);
        if (info.isDefined()) {
            mirror.recordEarlyEnd(BridgeListener.taskEnd(info.get(), tsm.stageId(), tsm.taskSet().stageAttemptId(),
                    System.currentTimeMillis(), "Success"));
        }
    }

    private Seq<Seq<TaskDescription>> counted(BridgeStats.Launch by, Seq<Seq<TaskDescription>> launched) {
        stats.launched(by, size(launched));
        for (Seq<TaskDescription> perOffer : CollectionConverters.asJava(launched)) {
            for (TaskDescription t : CollectionConverters.asJava(perOffer)) {
                sc.listenerBus().post(new PlacementEvent(policy, round, by.name(), t.taskId(), t.name(), t.executorId()));
            }
        }
        return launched;
    }

    /**
     * The scheduler has started (the application has its id, Spark's metrics system runs): the
     * plugin's counters join it as the {@code schedbridge} source.
     */
    void started() {
        sc.env().metricsSystem().registerSource(new BridgeMetrics(stats));
    }

    private static int size(Seq<Seq<TaskDescription>> launched) {
        int n = 0;
        for (Seq<TaskDescription> l : CollectionConverters.asJava(launched)) {
            n += l.size();
        }
        return n;
    }

    /** True if free slots and pending tasks both remain after the policy's grants. */
    private static boolean heldBack(OfferBatch batch, Seq<Seq<TaskDescription>> launched) {
        int started = size(launched);
        int free = 0;
        for (JsonNode s : batch.request.get("slots")) {
            free += s.get("free").asInt();
        }
        int pending = 0;
        for (JsonNode s : batch.request.get("stages")) {
            pending += s.get("pending").asInt();
        }
        return started < Math.min(free, pending);
    }

    /**
     * A late call re-offers when it answers; one that never does (a hung host) must still end in a
     * fallback round, and local and standalone backends offer only when a task ends: so a round
     * comes once the late limit has passed.
     */
    private void offerPastTheLateLimit(Runnable revive) {
        reviveAfter(lateCheckScheduled, lateLimitMs + 1L, revive);
    }

    private void reviveLater(Runnable revive) {
        reviveAfter(reviveScheduled, reviveMs, revive);
    }

    /** A new round in {@code ms}, unless one is already due by {@code scheduled}. */
    private void reviveAfter(AtomicBoolean scheduled, long ms, Runnable revive) {
        if (scheduled.compareAndSet(false, true)) {
            timer.schedule(() -> {
                scheduled.set(false);
                revive.run();
            }, ms, TimeUnit.MILLISECONDS);
        }
    }

    /**
     * True if the last answer declared Spark's order, recently, for exactly these runnable stages
     * and no executor it did not see: the policy's answer is known without asking.
     */
    private boolean sparkOrderHolds(List<WorkerOffer> offers, List<TaskSetManager> queue) {
        if (sparkOrderStages == null || System.currentTimeMillis() - lastRoundMs >= SPARK_ORDER_MS
                || queue.size() != sparkOrderStages.size()) {
            return false;
        }
        for (TaskSetManager tsm : queue) {
            if (!sparkOrderStages.contains(OfferBatch.key(tsm.stageId(), tsm.taskSet().stageAttemptId()))) {
                return false;
            }
        }
        for (WorkerOffer o : offers) {
            if (!sparkOrderExecutors.contains(o.executorId())) {
                return false;
            }
        }
        return true;
    }

    /**
     * A round without free slots is not sent, and its launch report waits for the next round
     * that is. A host that asked for launches at once (a preempting policy's node side learns
     * from them which container runs which of its tasks, to shrink a queued one, and must not
     * wait for a slot to free up) gets the round as a report: no grant is possible; its kills
     * apply. Other policies are spared the extra round trip, and its chance to miss a deadline.
     */
    private void reportLaunches(OfferBatch batch) {
        if (launchedReport.isEmpty() || !client.wantsLaunchReports()) {
            return;
        }
        PolicyClient.Answer answer = ask(batch, null);
        if (answer.answered()) {
            fromNodes(new Placement(answer.reply()));
        }
    }

    /** What a reply holds beside its grants: the kills it asks for, the containers its node side resized. */
    private void fromNodes(Placement placement) {
        stats.containers(placement.containers);
        preempt(placement.preempt);
    }

    /**
     * Sends the round with the launches not reported yet (a round not sent keeps them);
     * {@code revive} is null for a round that has no free slot to grant (see {@link PolicyClient#round}).
     */
    private PolicyClient.Answer ask(OfferBatch batch, Runnable revive) {
        sparkOrderStages = null;  // a new answer replaces any earlier declaration
        lastRoundMs = System.currentTimeMillis();
        batch.request.set("launched", launchedReport);
        launchedReport = JsonNodeFactory.instance.arrayNode();
        return client.round(batch.request, revive);
    }

    /** Spark sees the offers (it registers new executors) but no task set: nothing launches. */
    private Seq<Seq<TaskDescription>> launchNothing(IndexedSeq<WorkerOffer> offers, boolean all, SparkOffers spark) {
        try {
            pool.showOnly(null);
            return spark.resourceOffers(offers, all);
        } finally {
            pool.showAll();
        }
    }

    private OfferBatch newBatch(List<WorkerOffer> offers, List<TaskSetManager> queue) {
        return new OfferBatch(sc.applicationId(), ++round, cpusPerTask, offers, queue, mirror);
    }

    /** The scheduler's root pool (created on first use, when Spark initialises the scheduler). */
    Pool rootPool(Enumeration.Value schedulingMode) {
        if (pool == null) {
            pool = new FilteringPool(schedulingMode);
        }
        return pool;
    }

    /** Barrier stages, custom resources and non-default resource profiles stay Spark's. */
    private static boolean policyCanPlace(List<WorkerOffer> offers, List<TaskSetManager> queue) {
        for (TaskSetManager tsm : queue) {
            if (tsm.isBarrier() || tsm.taskSet().resourceProfileId() != 0) {
                return false;
            }
        }
        for (WorkerOffer o : offers) {
            if (o.resourceProfileId() != 0 || !o.resources().resourceAddressAmount().isEmpty()) {
                return false;
            }
        }
        return true;
    }

    private Seq<Seq<TaskDescription>> apply(Placement placement, OfferBatch batch, List<WorkerOffer> list,
                                           IndexedSeq<WorkerOffer> offers, boolean all, SparkOffers spark) {
        int[] freeCores = new int[list.size()];
        List<List<TaskDescription>> launched = new ArrayList<>();
        for (int i = 0; i < list.size(); i++) {
            freeCores[i] = list.get(i).cores().toInt();
            launched.add(new ArrayList<>());
        }
        try {
            launchNothing(offers, all, spark);  // lets Spark register new executors
            for (Map.Entry<String, Map<String, Integer>> grant : placement.grants.entrySet()) {
                TaskSetManager tsm = batch.stages.get(grant.getKey());
                if (tsm != null) {
                    pool.showOnly(tsm);
                    launchGranted(tsm, grant.getValue(), batch, list, freeCores, launched, spark);
                }
            }
        } finally {
            pool.showAll();
        }
        List<Seq<TaskDescription>> out = new ArrayList<>();
        for (List<TaskDescription> l : launched) {
            out.add(CollectionConverters.asScala(l).toSeq());
        }
        return CollectionConverters.asScala(out).toSeq();
    }

    /** Offers the granted slots (capped by what is still free) to the one visible task set. */
    private void launchGranted(TaskSetManager tsm, Map<String, Integer> slots, OfferBatch batch, List<WorkerOffer> list,
                               int[] freeCores, List<List<TaskDescription>> launched, SparkOffers spark) {
        List<WorkerOffer> sub = new ArrayList<>();
        for (Map.Entry<String, Integer> s : slots.entrySet()) {
            Integer i = batch.offerIndex.get(s.getKey());
            int cores = i == null ? 0 : Math.min(s.getValue() * cpusPerTask, freeCores[i]);
            if (cores >= cpusPerTask) {
                WorkerOffer o = list.get(i);
                sub.add(new WorkerOffer(o.executorId(), o.host(), BigDecimal$.MODULE$.apply(cores), o.address(),
                        o.resources(), o.resourceProfileId()));
            }
        }
        if (sub.isEmpty()) {
            return;
        }
        // Spark shuffles the offers and answers in the shuffled order: each task names its executor
        Map<String, List<TaskDescription>> byExecutor = new TreeMap<>();
        for (Seq<TaskDescription> tasks : CollectionConverters.asJava(
                spark.resourceOffers(CollectionConverters.asScala(sub).toIndexedSeq(), false))) {
            for (TaskDescription t : CollectionConverters.asJava(tasks)) {
                byExecutor.computeIfAbsent(t.executorId(), e -> new ArrayList<>()).add(t);
            }
        }
        for (Map.Entry<String, List<TaskDescription>> e : byExecutor.entrySet()) {
            int i = batch.offerIndex.get(e.getKey());
            launched.get(i).addAll(e.getValue());
            freeCores[i] -= e.getValue().size() * cpusPerTask;
            report(tsm, e.getKey(), e.getValue());
        }
    }

    /** Adds the launches to the next request's {@code launched} report and their starts to the mirror. */
    private void report(TaskSetManager tsm, String executor, List<TaskDescription> tasks) {
        int attempt = tsm.taskSet().stageAttemptId();
        ArrayNode ids = launchEntry(launchedReport, tsm.stageId(), attempt, executor);
        for (TaskDescription t : tasks) {
            ids.add(t.taskId());
            Option<TaskInfo> info = tsm.taskInfos().get(t.taskId());
            if (info.isDefined()) {
                mirror.recordEarlyStart(BridgeListener.taskStart(info.get(), tsm.stageId(), attempt));
            }
        }
    }

    /** Adds one grant's entry to a {@code launched} report; returns its (empty) list of task ids. */
    static ArrayNode launchEntry(ArrayNode report, int stage, int attempt, String executor) {
        return report.addObject().put("stage", stage).put("attempt", attempt).put("executor", executor)
                .putArray("tasks");
    }

    /**
     * Kills the named task attempts (Spark re-queues them, not counting a failure) off the offer
     * thread, if still running; at most {@code max.kills.per.round} a round and
     * {@code max.kills.per.task} over a task's attempts, so no reply can kill without bound.
     */
    private void preempt(List<Long> taskIds) {
        int killed = 0;
        for (long id : taskIds) {
            String task = mirror.runningTask(id);
            if (task == null) {
                continue;
            }
            if (killed == maxKillsPerRound || kills.getOrDefault(task, 0) == maxKillsPerTask) {
                stats.killRefused(id, task);
                continue;
            }
            killed++;
            stats.killed(id, task);
            kills.merge(task, 1, Integer::sum);
            timer.execute(() -> sc.killTaskAttempt(id, true, "schedbridge: preempted by the policy"));
        }
    }

    /** Stops the policy connection (and a host it started), then reports who placed the tasks. */
    @Override
    public void close() {
        timer.shutdownNow();
        client.detach(sc.applicationId());
        client.close();
        stats.publish(true);
        if (stats.degraded()) {
            LOG.warn(stats.summary());
        } else {
            LOG.info(stats.summary());
        }
        if (!statsFile.isEmpty()) {
            writeStats(Path.of(statsFile));
        }
    }

    /** The counters as JSON, written whole (a temporary file renamed over the target). */
    private void writeStats(Path target) {
        try {
            Path parent = target.toAbsolutePath().getParent();
            Files.createDirectories(parent);
            Path tmp = Files.createTempFile(parent, target.getFileName().toString(), ".tmp");
            Files.writeString(tmp, stats.counters().toString() + "\n", StandardCharsets.UTF_8);
            Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            LOG.warn("schedbridge: cannot write {}{}: {}", BridgeConf.PREFIX + "stats.file=", target, e.toString());
        }
    }
}
