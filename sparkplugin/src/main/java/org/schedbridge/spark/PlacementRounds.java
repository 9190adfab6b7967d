package org.schedbridge.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
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
    /**
     * A round naming a stage whose job's start the listener has not delivered yet waits this long
     * for it (see {@link ClusterMirror#awaitJobs}); past it the stage goes without its job's DAG,
     * counted as a warning.
     */
    private static final long JOB_START_WAIT_MS = 100;
    /** Local mode's liveness bound is the late limit plus this; also how often it is checked. */
    private static final long LIVENESS_MARGIN_MS = 1000;

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
    /** A round to send the news of launches ahead is due: set while one is scheduled. */
    private final AtomicBoolean sendScheduled = new AtomicBoolean();
    private final int lateLimitMs;
    private final String statsFile;
    /** Free slots held back while tasks wait longer than {@code hold.max}: one round is Spark's. */
    private final HoldWatch holds;
    /** Local mode's liveness clock (see {@link #keepAlive}); null on backends that revive by themselves. */
    private volatile Liveness liveness;
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
    /** {@code spark.schedbridge.launch.ahead}: freed slots take their predicted stage before the policy is asked. */
    private final boolean launchAhead;
    /** How long the news of launches ahead gather before they go to the policy. */
    private final SendPace pace;
    /** Executor id -> the stage key its freed slots may take until the next reply (the reply's {@code next}). */
    private Map<String, String> predicted = Map.of();
    /** The executors Spark has been offered whole (see {@link #registerNew}). */
    private final Set<String> registered = new HashSet<>();
    /** Per executor, its tasks that ended since the last request went out: the slots a launch ahead may fill. */
    private final Map<String, Integer> freed = new HashMap<>();

    /** The runnable stages by key and the offers' positions by executor: where a reply's grants go. */
    private record Lookup(Map<String, TaskSetManager> stages, Map<String, Integer> offerIndex) {
        static Lookup of(OfferBatch batch) {
            return new Lookup(batch.stages, batch.offerIndex);
        }
    }

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
        this.holds = new HoldWatch(conf.holdMaxMs);
        this.maxKillsPerTask = conf.maxKillsPerTask;
        this.policy = conf.policy;
        this.launchAhead = conf.launchAhead;
        this.pace = new SendPace(conf.launchAheadMaxWaitMs);
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
        Seq<Seq<TaskDescription>> launched = place(list, queue, offers, all, spark, revive);
        Liveness check = liveness;
        if (check != null) {
            check.roundEnded(System.currentTimeMillis(), leftWork(list, launched, queue));
        }
        return launched;
    }

    private Seq<Seq<TaskDescription>> place(List<WorkerOffer> list, List<TaskSetManager> queue,
            IndexedSeq<WorkerOffer> offers, boolean all, SparkOffers spark, Runnable revive) {
        if (sc.applicationId() == null) {
            return spark.resourceOffers(offers, all);  // not registered yet: no tasks to place
        }
        Placement landed = launchAhead ? landed() : null;
        if (queue.isEmpty()) {
            if (mirror.hasPending() && System.currentTimeMillis() - lastRoundMs >= IDLE_FLUSH_MS && !client.awaiting()) {
                ask(newBatch(list, null, queue), null);
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
        if (holds.expired(System.currentTimeMillis())) {  // the watchdog: this round is Spark's, then the policy's
            stats.watchdogRound(holds.maxMs());
            return counted(BridgeStats.Launch.FALLBACK, spark.resourceOffers(offers, all));
        }
        long start = System.nanoTime();
        if (launchAhead) {
            Seq<Seq<TaskDescription>> launched = aheadRound(landed, list, queue, offers, all, spark, revive);
            if (launched != null) {
                stats.roundDone((System.nanoTime() - start) / 1000);
                return launched;
            }
        }
        OfferBatch batch = newBatch(list, null, queue);
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
                apply(placement, Lookup.of(batch), list, offers, all, spark));
        if (heldBack(batch, launched)) {
            stats.heldBack();
            holds.held(System.currentTimeMillis());
            reviveLater(revive);
        } else {
            holds.ended();
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
        if (info.isDefined() && launchAhead) {
            freed.merge(info.get().executorId(), 1, Integer::sum);
        }
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
        if (launchedReport.isEmpty() || !client.wantsLaunchReports() || client.awaiting()) {
            return;
        }
        PolicyClient.Answer answer = ask(batch, null);
        if (answer.answered()) {
            fromNodes(new Placement(answer.reply()));
        }
    }

    /**
     * What a reply holds beside its grants: the kills it asks for, the containers its node side
     * resized, the stages freed slots may take next and the launches ahead to withdraw.
     */
    private void fromNodes(Placement placement) {
        stats.containers(placement.containers);
        preempt(placement.preempt);
        predicted = placement.next;
        withdraw(placement.withdraw);
    }

    /**
     * The answer to a request sent without waiting, if it has landed since the last round: what it
     * holds beside its grants is taken in; its grants are the caller's to launch.
     */
    private Placement landed() {
        PolicyClient.Answer answer = client.collect();
        if (answer == null) {
            return null;
        }
        if (!answer.answered()) {
            predicted = Map.of();  // failed (counted by the client): ask before launching again
            pace.failed();
            return null;
        }
        Placement placement = new Placement(answer.reply());
        fromNodes(placement);
        pace.answered(!placement.withdraw.isEmpty());
        return placement;
    }

    /**
     * A round that launches ahead of the policy's answer, or null where it must ask the policy and
     * wait (the synchronous round: nothing launched yet, and slots free for which nothing is
     * predicted). It launches the grants of an answer that landed since the last round, then fills
     * each executor's slots freed since the last request with the stage the policy last placed
     * there (the reply's {@code next}); the host confirms each such launch against the policy's own
     * decision or has it withdrawn. What happened goes to the host without waiting, paced by
     * {@link SendPace}; while a call is out it waits for a later round, and launches ahead go
     * on until the call has been out for {@code late.limit} (then the round falls back).
     */
    private Seq<Seq<TaskDescription>> aheadRound(Placement landed, List<WorkerOffer> list,
            List<TaskSetManager> queue, IndexedSeq<WorkerOffer> offers, boolean all, SparkOffers spark, Runnable revive) {
        boolean out = client.awaiting();
        boolean news = !freed.isEmpty() || mirror.hasPending();
        if (out && client.outForMs() > lateLimitMs || !out && landed == null && !news) {
            return null;  // a call out past the late limit (the synchronous round falls back), or nothing to go by
        }
        Lookup at = new Lookup(OfferBatch.byKey(queue), OfferBatch.indexOf(list));
        int[] freeCores = new int[list.size()];
        List<List<TaskDescription>> launched = new ArrayList<>();
        for (int i = 0; i < list.size(); i++) {
            freeCores[i] = list.get(i).cores().toInt();
            launched.add(new ArrayList<>());
        }
        int ahead;
        try {
            registerNew(list, offers, all, spark);
            if (landed != null) {
                launchGrants(landed, at, list, freeCores, launched, spark);
            }
            ahead = launchAheadOn(at, list, freeCores, launched, spark);
        } finally {
            pool.showAll();
        }
        int n = 0;
        for (List<TaskDescription> l : launched) {
            n += l.size();
        }
        boolean idle = waiting(freeCores, queue);
        if (n == 0 && !out && idle) {
            return null;  // free slots, tasks waiting, nothing predicted for them: the policy decides now
        }
        if (out && idle) {
            offerPastTheLateLimit(revive);  // slots wait for the call's answer, which a hung host never gives
        }
        if (!idle) {
            holds.ended();  // every free slot took a task (e.g. grants of an answer that landed): nothing is held
        }
        if (!out && (ahead > 0 || news)) {
            long wait = lastRoundMs + pace.waitMs() - System.currentTimeMillis();
            if (wait > 0) {
                reviveAfter(sendScheduled, wait, revive);  // then with whatever else happened meanwhile
            } else {
                OfferBatch batch = newBatch(list, freeCores, queue);
                batch.request.set("launched", takeLaunchReport());
                sparkOrderStages = null;
                lastRoundMs = System.currentTimeMillis();
                client.send(batch.request, revive);  // its failure is counted by the client; the next round asks again
            }
        }
        return counted(BridgeStats.Launch.POLICY, perOffer(launched));
    }

    /**
     * Local mode: from now on a round that left a free slot with a task waiting and was followed by
     * no round for longer than the liveness bound is revived, counted as a fault. The bound outlasts
     * every wake-up the rounds schedule (the late limit's is the longest), so it fires only where a
     * round scheduled none; other backends revive every second by themselves.
     */
    void keepAlive(Runnable revive) {
        Liveness check = new Liveness(lateLimitMs + LIVENESS_MARGIN_MS);
        liveness = check;
        timer.scheduleWithFixedDelay(() -> {
            if (check.stalled(System.currentTimeMillis())) {
                if (stats.stallRevived(check.boundMs())) {
                    LOG.warn("schedbridge: no offer round came for over {} ms while a slot was free and tasks "
                            + "waited; revived (counted as stall_revivals; warned once)", check.boundMs());
                }
                revive.run();
            }
        }, LIVENESS_MARGIN_MS, LIVENESS_MARGIN_MS, TimeUnit.MILLISECONDS);
    }

    /** True if, after the round's launches, an executor has a free slot and a task waits for one. */
    private boolean leftWork(List<WorkerOffer> list, Seq<Seq<TaskDescription>> launched, List<TaskSetManager> queue) {
        int cores = 0;
        for (WorkerOffer o : list) {
            cores += o.cores().toInt();
        }
        if (cores - size(launched) * cpusPerTask < cpusPerTask) {
            return false;  // every slot took a task (a large stage's usual round): no per-executor count needed
        }
        Map<String, Integer> started = new HashMap<>();
        for (Seq<TaskDescription> perOffer : CollectionConverters.asJava(launched)) {
            for (TaskDescription t : CollectionConverters.asJava(perOffer)) {
                started.merge(t.executorId(), 1, Integer::sum);
            }
        }
        int[] freeCores = new int[list.size()];
        for (int i = 0; i < list.size(); i++) {
            WorkerOffer o = list.get(i);
            freeCores[i] = o.cores().toInt() - started.getOrDefault(o.executorId(), 0) * cpusPerTask;
        }
        return waiting(freeCores, queue);
    }

    /** True if a core is free and a runnable stage has a task that is neither running nor done. */
    private boolean waiting(int[] freeCores, List<TaskSetManager> queue) {
        boolean free = false;
        for (int c : freeCores) {
            free |= c >= cpusPerTask;
        }
        if (free) {
            for (TaskSetManager tsm : queue) {
                if (tsm.numTasks() - tsm.tasksSuccessful() - tsm.runningTasks() > 0) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * Fills each executor's slots freed since the last request with its predicted stage, while
     * that stage has tasks to launch; returns how many it launched.
     */
    private int launchAheadOn(Lookup at, List<WorkerOffer> list, int[] freeCores, List<List<TaskDescription>> launched,
                            SparkOffers spark) {
        int n = 0;
        for (Map.Entry<String, Integer> f : freed.entrySet()) {
            TaskSetManager tsm = at.stages().get(predicted.get(f.getKey()));
            Integer i = at.offerIndex().get(f.getKey());
            int slots = i == null ? 0 : Math.min(f.getValue(), freeCores[i] / cpusPerTask);
            if (tsm != null && slots > 0) {
                pool.showOnly(tsm);
                int got = launchGranted(tsm, Map.of(f.getKey(), slots), at, list, freeCores, launched, spark, true);
                f.setValue(f.getValue() - got);
                n += got;
            }
        }
        freed.values().removeIf(v -> v <= 0);
        stats.launchedAhead(n);
        return n;
    }

    /**
     * Kills the launches ahead the policy did not choose, if still running (Spark runs each
     * task again, where the policy's grant says; a kill is not a failure). The plugin's own launches:
     * not bounded by the policy's kill limits.
     */
    private void withdraw(List<Long> taskIds) {
        for (long id : taskIds) {
            if (mirror.runningTask(id) != null) {
                stats.withdrawn();
                timer.execute(() -> sc.killTaskAttempt(id, true, "schedbridge: launched ahead of the policy, which "
                        + "placed another task there"));
            }
        }
    }

    /**
     * Sends the round with the launches not reported yet (a round not sent keeps them);
     * {@code revive} is null for a round that has no free slot to grant (see {@link PolicyClient#round}).
     */
    private PolicyClient.Answer ask(OfferBatch batch, Runnable revive) {
        sparkOrderStages = null;  // a new answer replaces any earlier declaration
        lastRoundMs = System.currentTimeMillis();
        batch.request.set("launched", takeLaunchReport());
        return client.round(batch.request, revive);
    }

    /** The launches not reported yet, for a request about to go out (which tells the host of the ends since, too). */
    private ArrayNode takeLaunchReport() {
        ArrayNode report = launchedReport;
        launchedReport = JsonNodeFactory.instance.arrayNode();
        freed.clear();
        return report;
    }

    /**
     * Offers every executor once to Spark with no task set visible when an offer names one it was
     * never offered: Spark registers an executor when it is first offered, and a grant's offer
     * holds only the executors granted. One full pass of Spark's {@code resourceOffers} per round
     * otherwise, before each round's grants: measurable CPU per task end on a small driver.
     */
    private void registerNew(List<WorkerOffer> list, IndexedSeq<WorkerOffer> offers, boolean all, SparkOffers spark) {
        boolean fresh = false;
        for (WorkerOffer o : list) {
            fresh |= registered.add(o.executorId());
        }
        if (fresh) {
            launchNothing(offers, all, spark);
        }
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

    private OfferBatch newBatch(List<WorkerOffer> offers, int[] freeCores, List<TaskSetManager> queue) {
        List<Integer> jobs = new ArrayList<>();
        for (TaskSetManager tsm : queue) {
            jobs.add(tsm.taskSet().priority());
        }
        for (int job : mirror.awaitJobs(jobs, JOB_START_WAIT_MS)) {
            String reason = "job " + job + "'s start had not reached the listener " + JOB_START_WAIT_MS
                    + " ms after its stages did: the policy gets them without the job's stage DAG";
            stats.warning(reason);
            LOG.warn("schedbridge: {}", reason);
        }
        return new OfferBatch(sc.applicationId(), ++round, cpusPerTask, offers, freeCores, queue, mirror, launchAhead);
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

    private Seq<Seq<TaskDescription>> apply(Placement placement, Lookup at, List<WorkerOffer> list,
                                           IndexedSeq<WorkerOffer> offers, boolean all, SparkOffers spark) {
        int[] freeCores = new int[list.size()];
        List<List<TaskDescription>> launched = new ArrayList<>();
        for (int i = 0; i < list.size(); i++) {
            freeCores[i] = list.get(i).cores().toInt();
            launched.add(new ArrayList<>());
        }
        try {
            registerNew(list, offers, all, spark);
            launchGrants(placement, at, list, freeCores, launched, spark);
        } finally {
            pool.showAll();
        }
        return perOffer(launched);
    }

    /** The tasks launched per offer, as Spark's {@code resourceOffers} answers. */
    private static Seq<Seq<TaskDescription>> perOffer(List<List<TaskDescription>> launched) {
        List<Seq<TaskDescription>> out = new ArrayList<>();
        for (List<TaskDescription> l : launched) {
            out.add(CollectionConverters.asScala(l).toSeq());
        }
        return CollectionConverters.asScala(out).toSeq();
    }

    /** Each granted stage, shown alone, offered its granted slots (the caller shows every stage again). */
    private void launchGrants(Placement placement, Lookup at, List<WorkerOffer> list, int[] freeCores,
                              List<List<TaskDescription>> launched, SparkOffers spark) {
        for (Map.Entry<String, Map<String, Integer>> grant : placement.grants.entrySet()) {
            TaskSetManager tsm = at.stages().get(grant.getKey());
            if (tsm != null) {
                pool.showOnly(tsm);
                launchGranted(tsm, grant.getValue(), at, list, freeCores, launched, spark, false);
            }
        }
    }

    /**
     * Offers the granted slots (capped by what is still free) to the one visible task set; returns
     * how many tasks it launched. {@code ahead}: launched on a prediction, ahead of a grant.
     */
    private int launchGranted(TaskSetManager tsm, Map<String, Integer> slots, Lookup at, List<WorkerOffer> list,
                              int[] freeCores, List<List<TaskDescription>> launched, SparkOffers spark,
                              boolean ahead) {
        List<WorkerOffer> sub = new ArrayList<>();
        for (Map.Entry<String, Integer> s : slots.entrySet()) {
            Integer i = at.offerIndex().get(s.getKey());
            int cores = i == null ? 0 : Math.min(s.getValue() * cpusPerTask, freeCores[i]);
            if (cores >= cpusPerTask) {
                WorkerOffer o = list.get(i);
                sub.add(new WorkerOffer(o.executorId(), o.host(), BigDecimal$.MODULE$.apply(cores), o.address(),
                        o.resources(), o.resourceProfileId()));
            }
        }
        if (sub.isEmpty()) {
            return 0;
        }
        // Spark shuffles the offers and answers in the shuffled order: each task names its executor
        Map<String, List<TaskDescription>> byExecutor = new TreeMap<>();
        for (Seq<TaskDescription> tasks : CollectionConverters.asJava(
                spark.resourceOffers(CollectionConverters.asScala(sub).toIndexedSeq(), false))) {
            for (TaskDescription t : CollectionConverters.asJava(tasks)) {
                byExecutor.computeIfAbsent(t.executorId(), e -> new ArrayList<>()).add(t);
            }
        }
        int n = 0;
        for (Map.Entry<String, List<TaskDescription>> e : byExecutor.entrySet()) {
            int i = at.offerIndex().get(e.getKey());
            launched.get(i).addAll(e.getValue());
            freeCores[i] -= e.getValue().size() * cpusPerTask;
            report(tsm, e.getKey(), e.getValue(), ahead);
            n += e.getValue().size();
        }
        return n;
    }

    /** Adds the launches to the next request's {@code launched} report and their starts to the mirror. */
    private void report(TaskSetManager tsm, String executor, List<TaskDescription> tasks, boolean ahead) {
        int attempt = tsm.taskSet().stageAttemptId();
        ArrayNode ids = launchEntry(launchedReport, tsm.stageId(), attempt, executor, ahead);
        for (TaskDescription t : tasks) {
            ids.add(t.taskId());
            Option<TaskInfo> info = tsm.taskInfos().get(t.taskId());
            if (info.isDefined()) {
                mirror.recordEarlyStart(BridgeListener.taskStart(info.get(), tsm.stageId(), attempt));
            }
        }
    }

    /** Adds one grant's (or prediction's) entry to a {@code launched} report; returns its (empty) list of task ids. */
    static ArrayNode launchEntry(ArrayNode report, int stage, int attempt, String executor, boolean ahead) {
        ObjectNode entry = report.addObject().put("stage", stage).put("attempt", attempt).put("executor", executor);
        if (ahead) {
            entry.put("ahead", true);
        }
        return entry.putArray("tasks");
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
