package org.schedbridge.spark;

import com.codahale.metrics.ExponentiallyDecayingReservoir;
import com.codahale.metrics.Histogram;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import org.apache.spark.scheduler.SparkListenerEvent;

/**
 * Counters of the current scheduler, read from Python (tests, benchmark) as a JSON string, written
 * to {@code spark.schedbridge.stats.file} and summed up in the driver's log when the application
 * stops: policy rounds, rounds that waited for a late answer, fallback rounds, failed reports
 * (calls without a slot to grant), warnings logged, rounds in which the policy held free slots back
 * while tasks were pending, rounds left to Spark's order without asking (the policy
 * declared it); tasks launched by the policy's grants (or its declared Spark order), in fallback
 * rounds, and of stages left to Spark by design (barrier, custom resources); and the latencies of
 * recent policy calls and of whole policy rounds. The same counters reach Spark's metrics system
 * through {@link BridgeMetrics}, and, with each fall-back's reason, each preemption and each container
 * the policy's node side suspended or resumed, Spark's event log through the journal ({@link BridgeEvents}).
 */
public final class BridgeStats {
    private static final int WINDOW = 1 << 16;
    /** The call's parts are kept for fewer calls (a benchmark's latency phase is ~1,000). */
    private static final int PARTS_WINDOW = 1 << 14;
    /** The counters reach the event log at most this often while they change. */
    private static final long PUBLISH_MS = 1000;
    private static BridgeStats current = new BridgeStats();

    private long policyRounds;
    private long fallbackRounds;
    private long lateRounds;
    private long failedReports;
    private long warnings;
    private long heldRounds;
    private long sparkOrderRounds;
    private long placedTasks;
    private long fallbackTasks;
    private long unmanagedTasks;
    private long kills;
    private long killsRefused;
    private long watchdogRounds;
    private long stallRevivals;
    private long aheadTasks;
    private long withdrawnTasks;
    private final ContainerCounts resizes = new ContainerCounts();
    private String policy = "";
    private String endpoint = "";
    private String lastFailure = "";
    /** Where events for Spark's listener bus go (nowhere until the scheduler sets it). */
    private Consumer<SparkListenerEvent> journal = e -> { };
    private long publishedMs;
    private Map<String, Long> published = Map.of();
    private final Window calls = new Window(WINDOW);
    private final Window rounds = new Window(WINDOW);
    private final Window serialise = new Window(PARTS_WINDOW);
    private final Window trip = new Window(PARTS_WINDOW);
    private final Window host = new Window(PARTS_WINDOW);
    private final Window parse = new Window(PARTS_WINDOW);
    /** The same latencies for Spark's metrics system ({@link BridgeMetrics}). */
    final Histogram callLatency = new Histogram(new ExponentiallyDecayingReservoir());
    final Histogram roundLatency = new Histogram(new ExponentiallyDecayingReservoir());

    /** The last values of one latency (µs), as many as the window holds. */
    private static final class Window {
        private final long[] micros;
        private long count;

        Window(int size) {
            micros = new long[size];
        }

        void add(long value) {
            micros[(int) (count++ % micros.length)] = value;
        }

        void into(ArrayNode out) {
            for (long i = count - Math.min(count, micros.length); i < count; i++) {
                out.add(micros[(int) (i % micros.length)]);
            }
        }
    }

    /**
     * Where an answered call's time went (µs): the request serialised; sent until its reply was
     * back (the hand-off to the call thread, the transport both ways, the host); the host's own
     * part of that, as its reply says (-1: a host that does not say); the reply parsed.
     */
    record CallParts(long serialiseUs, long tripUs, long hostUs, long parseUs) { }

    static synchronized BridgeStats reset(String policy, String endpoint) {
        current = new BridgeStats();
        current.policy = policy;
        current.endpoint = endpoint;
        return current;
    }

    /** Events from now on go to {@code post} (Spark's listener bus). */
    synchronized void journal(Consumer<SparkListenerEvent> post) {
        journal = post;
    }

    /** Which path launched {@code n} tasks in one offer round. */
    enum Launch { POLICY, FALLBACK, UNMANAGED }

    synchronized void launched(Launch by, int n) {
        switch (by) {
            case POLICY -> placedTasks += n;
            case FALLBACK -> fallbackTasks += n;
            case UNMANAGED -> unmanagedTasks += n;
        }
    }

    /**
     * A round given to Spark because the policy had held free slots back while tasks waited for
     * longer than the bound; counted as a fallback round too.
     */
    synchronized void watchdogRound(long boundMs) {
        watchdogRounds++;
        fallbackRounds++;
        lastFailure = "free slots held back while tasks waited over " + boundMs + " ms (the watchdog)";
        journal.accept(new BridgeEvents.Fallback(System.currentTimeMillis(), lastFailure));
    }

    /**
     * Local mode's liveness check revived a round that nothing had scheduled (see
     * {@link PlacementRounds#keepAlive}): a fault of the plugin. True the first time (to warn once).
     */
    synchronized boolean stallRevived(long boundMs) {
        stallRevivals++;
        lastFailure = "no offer round came for over " + boundMs + " ms while a slot was free and tasks waited "
                + "(the liveness check revived one)";
        if (stallRevivals == 1) {
            warnings++;
        }
        return stallRevivals == 1;
    }

    /** Tasks launched ahead of the policy's answer, on its prediction (each confirmed or withdrawn later). */
    synchronized void launchedAhead(int n) {
        aheadTasks += n;
    }

    /** A launch ahead the policy did not choose, killed (Spark runs the task again where the policy says). */
    synchronized void withdrawn() {
        withdrawnTasks++;
    }

    /** A kill the policy asked for, done; {@code task} is {@code stage.index}. */
    synchronized void killed(long taskId, String task) {
        kills++;
        journal.accept(new BridgeEvents.Preemption(System.currentTimeMillis(), taskId, task, true));
    }

    /** A kill the policy asked for beyond the per-round or per-task bound (not done). */
    synchronized void killRefused(long taskId, String task) {
        killsRefused++;
        journal.accept(new BridgeEvents.Preemption(System.currentTimeMillis(), taskId, task, false));
    }

    /** Containers the policy's node side suspended or resumed, as its host told. */
    synchronized void containers(List<Placement.Container> changes) {
        long now = System.currentTimeMillis();
        for (Placement.Container c : changes) {
            resizes.count(c.suspend(), c.ok());
            journal.accept(new BridgeEvents.ContainerChange(now, c.executor(), c.container(), c.suspend(), c.ok()));
        }
    }

    /** A failure outside any round (at start, with fallback=true). */
    synchronized void warning(String reason) {
        warnings++;
        lastFailure = reason;
    }

    /** A policy call answered in {@code micros} (request serialised, transport, reply parsed). */
    synchronized void policyRound(long micros, CallParts parts) {
        policyRounds++;
        calls.add(micros);
        callLatency.update(micros);
        serialise.add(parts.serialiseUs());
        parse.add(parts.parseUs());
        if (parts.hostUs() >= 0) {
            host.add(parts.hostUs());
            trip.add(parts.tripUs() - parts.hostUs());
        }
    }

    /** A whole policy round took {@code micros} in the scheduler (batch, call, grants applied). */
    synchronized void roundDone(long micros) {
        rounds.add(micros);
        roundLatency.update(micros);
    }

    synchronized void heldBack() {
        heldRounds++;
    }

    /** A round left to Spark without asking, because the policy declared Spark's order. */
    synchronized void sparkOrderRound() {
        sparkOrderRounds++;
    }

    /**
     * A round that launched nothing because the policy's answer was late (a stalled host, a busy
     * machine): a placing round is offered again when the answer lands, a report's events reach the
     * host with it. Not a failure unless the call stays out past the late limit.
     */
    synchronized void lateRound(boolean warned) {
        lateRounds++;
        if (warned) {
            warnings++;
        }
    }

    synchronized void fallback(String reason, boolean warned) {
        fallbackRounds++;
        lastFailure = reason;
        journal.accept(new BridgeEvents.Fallback(System.currentTimeMillis(), reason));
        if (warned) {
            warnings++;
        }
    }

    /**
     * A failed call that could not have granted a slot (an idle flush, a launch report): nothing
     * fell back, and its events go out again in the next round's snapshot.
     */
    synchronized void reportFailed(String reason, boolean warned) {
        failedReports++;
        lastFailure = reason;
        if (warned) {
            warnings++;
        }
    }

    /**
     * JSON: counters plus {@code call_us} and {@code round_us}, up to the last 65,536 of each, and
     * the calls' parts, up to the last 16,384: {@code serialise_us}, {@code host_us}, {@code
     * trip_us} (sent until the reply was back, less the host's part) and {@code parse_us}.
     */
    public static synchronized String json() {
        BridgeStats s = current;
        synchronized (s) {
            ObjectNode out = s.counters();
            s.calls.into(out.putArray("call_us"));
            s.rounds.into(out.putArray("round_us"));
            s.serialise.into(out.putArray("serialise_us"));
            s.host.into(out.putArray("host_us"));
            s.trip.into(out.putArray("trip_us"));
            s.parse.into(out.putArray("parse_us"));
            return out.toString();
        }
    }

    synchronized ObjectNode counters() {
        return JsonNodeFactory.instance.objectNode().put("policy", policy).put("endpoint", endpoint)
                .put("policy_rounds", policyRounds).put("fallback_rounds", fallbackRounds)
                .put("late_rounds", lateRounds)
                .put("failed_reports", failedReports)
                .put("warnings", warnings).put("held_rounds", heldRounds).put("spark_order_rounds", sparkOrderRounds)
                .put("placed_tasks", placedTasks).put("fallback_tasks", fallbackTasks)
                .put("unmanaged_tasks", unmanagedTasks).put("kills", kills).put("kills_refused", killsRefused)
                .put("watchdog_rounds", watchdogRounds).put("stall_revivals", stallRevivals)
                .put("ahead_tasks", aheadTasks)
                .put("withdrawn_tasks", withdrawnTasks).put("suspends", resizes.suspends())
                .put("resumes", resizes.resumes()).put("failed_container_commands", resizes.failed())
                .put("last_failure", lastFailure);
    }

    /** The integral counters by name, for Spark's metrics system and the event log. */
    synchronized Map<String, Long> numbers() {
        Map<String, Long> out = new TreeMap<>();
        counters().properties().forEach(field -> {
            if (field.getValue().isIntegralNumber()) {
                out.put(field.getKey(), field.getValue().asLong());
            }
        });
        return out;
    }

    /**
     * Posts the counters if they changed since the last post and, unless {@code now}, a second
     * has passed since then.
     */
    synchronized void publish(boolean now) {
        long t = System.currentTimeMillis();
        if (!now && t - publishedMs < PUBLISH_MS) {
            return;
        }
        Map<String, Long> numbers = numbers();
        if (!numbers.equals(published)) {
            published = numbers;
            publishedMs = t;
            journal.accept(new BridgeEvents.Counters(t, numbers));
        }
    }

    /** One line for the driver's log when the application stops: who placed the tasks. */
    synchronized String summary() {
        return "schedbridge: policy " + policy + " (" + endpoint + ") placed " + placedTasks + " task(s) in "
                + policyRounds + " round(s); " + lateRounds + " round(s) waited for a late answer; "
                + fallbackRounds + " round(s) fell back to Spark's own scheduling ("
                + fallbackTasks + " task(s)" + (lastFailure.isEmpty() ? "" : ", last: " + lastFailure) + "); "
                + failedReports + " report(s) without a slot to grant failed; "
                + unmanagedTasks + " task(s) of barrier or custom-resource stages left to Spark";
    }

    synchronized boolean degraded() {
        return fallbackRounds > 0 || failedReports > 0 || warnings > 0 || stallRevivals > 0;
    }
}
