package org.schedbridge.spark;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.EnumSet;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One policy round trip per offer round, guarded: the call runs on its own thread and must answer
 * within the deadline. A late answer makes the round launch nothing and wait: the round is offered
 * again as soon as the call finishes (a busy machine can stall the host's process for a few hundred
 * ms, measured on the 2-core testbed: docs/live-preemption.md). A call out for longer than
 * {@code late.limit}, an unreachable host, an error or a malformed reply make the round fall back
 * to Spark's own scheduling. Each kind of failure is logged as a warning once per application, and
 * the first round after any failure carries the full state so the host rebuilds from Spark's.
 * Every new connection first attaches: it sends the application's policy and parameters, which the
 * host accepts or refuses, outside any round's deadline (bounded by the I/O timeout). At application
 * start ({@link #start}) a refusal or a host that does not answer is a configuration mistake and
 * stops the application, unless {@code spark.schedbridge.fallback=true}.
 */
final class PolicyClient implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PolicyClient.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The application's name, for the host's log (its id is not known before the backend starts). */
    private final String app;
    private final PolicyEndpoint endpoint;
    private final Transport transport;
    private final ClusterMirror mirror;
    private final BridgeConf conf;
    private final BridgeStats stats;
    private final ExecutorService caller =
            Executors.newSingleThreadExecutor(DaemonThreads.named("schedbridge-policy-call"));
    private Future<String> inflight;
    private long ackedEpoch = -1;
    private boolean needSnapshot = true;
    private long warmEpoch = -1;
    /** The host's answer to attach: send launches in rounds without a free slot too. */
    private volatile boolean launchReports;
    /** The last call missed its deadline; if it still succeeded, the host's state is current. */
    private boolean late;
    private final EnumSet<Failure> warned = EnumSet.noneOf(Failure.class);
    private boolean degraded;
    private long failedRounds;
    /** The call in progress could grant slots (its failure makes the round fall back). */
    private boolean placing;
    /** When the call in flight was sent (wall-clock ms): a round waits for it up to late.limit from then. */
    private long sentMs;
    /** Asks Spark for a new round; run once the late call finishes (by whichever thread sees it first). */
    private final AtomicReference<Runnable> reofferWhenAnswered = new AtomicReference<>();
    /** Set by the call thread once the call in flight has its answer, before it looks for a round to re-offer. */
    private volatile boolean callFinished;
    /** When the call in flight got its answer ({@code System.nanoTime}, set by the call thread). */
    private volatile long callBack;
    /** The call in flight: its connection's epoch, its round, when it began and when its request was sent. */
    private long callEpoch;
    private long callRound;
    private long callStart;
    private long callSent;
    /** A call {@link #send} made whose answer no round has collected yet. */
    private boolean unanswered;

    /** Why a round fell back (or, for DEADLINE, first waited); each is warned about once. */
    enum Failure { UNREACHABLE, REFUSED, DEADLINE, POLICY_ERROR, PROTOCOL }

    /** A round's call: the host's reply, or none because the call is late (the round launches nothing
     * and is offered again when it answers) or failed (the round is Spark's). */
    record Answer(JsonNode reply, boolean late) {
        static final Answer FAILED = new Answer(null, false);
        static final Answer LATE = new Answer(null, true);
        /** Sent without waiting ({@link PolicyClient#send}): its answer comes through {@link PolicyClient#collect}. */
        static final Answer SENT = new Answer(null, true);

        boolean answered() {
            return reply != null;
        }

        boolean failed() {
            return reply == null && !late;
        }
    }

    /** The host will not serve this application's policy or parameters; its message says why. */
    static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;

        Refused(String reason) {
            super(reason);
        }
    }

    PolicyClient(String app, PolicyEndpoint endpoint, ClusterMirror mirror, BridgeConf conf, BridgeStats stats) {
        this.app = app;
        this.endpoint = endpoint;
        this.transport = endpoint.transport;
        this.mirror = mirror;
        this.conf = conf;
        this.stats = stats;
    }

    /**
     * Sends {@code request} (events or snapshot added here). {@code reoffer} asks Spark for a new
     * offer round: a late placing round runs it when its call finishes. It is null for a call that
     * cannot grant a slot (an idle flush, a launch report): its failure is counted as a failed
     * report, not as a round that fell back, and nothing is offered again when it answers late.
     */
    Answer round(ObjectNode request, Runnable reoffer) {
        Answer refused = begin(request, reoffer);
        if (refused != null) {
            return refused;
        }
        try {
            return accept(inflight.get(conf.deadlineMs, TimeUnit.MILLISECONDS));
        } catch (TimeoutException e) {
            late = true;
            return late("policy call exceeded its " + conf.deadlineMs + " ms deadline", reoffer);
        } catch (ExecutionException e) {
            return fail(Failure.UNREACHABLE, "policy call failed: " + e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return fail(Failure.UNREACHABLE, "interrupted");
        }
    }

    /**
     * Sends {@code request} like {@link #round} but does not wait: the answer is {@link #collect}ed
     * by a later round, which {@code reoffer} asks Spark for as soon as it lands. Returns
     * {@link Answer#SENT}, or why the request could not go out (as {@link #round} would).
     */
    Answer send(ObjectNode request, Runnable reoffer) {
        Answer refused = begin(request, reoffer);
        if (refused != null) {
            return refused;
        }
        unanswered = true;
        reofferWhenAnswered.set(reoffer);
        if (callFinished) {  // the call thread may have looked before the set
            reofferIfWaiting();
        }
        return Answer.SENT;
    }

    /** The answer to the last {@link #send} once it has landed; null while it is out, or if none is. */
    Answer collect() {
        if (!unanswered || !inflight.isDone()) {
            return null;
        }
        unanswered = false;
        try {
            return accept(inflight.get());
        } catch (ExecutionException e) {
            return fail(Failure.UNREACHABLE, "policy call failed: " + e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return fail(Failure.UNREACHABLE, "interrupted");
        }
    }

    /** True while a call {@link #send} made has not answered; for how long: {@link #outForMs}. */
    boolean awaiting() {
        return unanswered && !inflight.isDone();
    }

    long outForMs() {
        return System.currentTimeMillis() - sentMs;
    }

    /**
     * Everything before a call waits: the transport free, the connection attached, the events (or a
     * snapshot) added, the request serialised and handed to the call thread. Null once it is sent,
     * else the round's answer (late or failed).
     */
    private Answer begin(ObjectNode request, Runnable reoffer) {
        placing = reoffer != null;
        if (caller.isShutdown()) {  // a re-offer racing SparkContext.stop: Spark winds down on its own
            return Answer.FAILED;
        }
        if (inflight != null && !inflight.isDone()) {  // checked first: the transport is busy with it
            return late("previous policy call still running past its " + conf.deadlineMs + " ms deadline", reoffer);
        }
        long epoch;
        try {
            epoch = connectAndAttach(conf.ioTimeoutMs);
        } catch (Refused e) {
            return fail(Failure.REFUSED, "policy host refused this application: " + e.getMessage());
        } catch (IOException | ExecutionException | TimeoutException e) {
            return fail(Failure.UNREACHABLE, "policy host unreachable: " + e.getMessage());
        } catch (RejectedExecutionException e) {  // closed meanwhile
            return Answer.FAILED;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return fail(Failure.UNREACHABLE, "interrupted");
        }
        if (late) {
            late = false;
            needSnapshot = !answered(inflight);
            if (!needSnapshot) {
                ackedEpoch = callEpoch;  // it carried this connection's snapshot: not sent again
            }
        }
        boolean snapshot = needSnapshot || epoch != ackedEpoch;
        mirror.drainInto(request, snapshot);
        if (snapshot) {
            putConf(request.putObject("conf"));
        }
        needSnapshot = true;
        callEpoch = epoch;
        callRound = request.path("round").asLong();
        callStart = System.nanoTime();
        try {
            String body = JSON.writeValueAsString(request);
            callSent = System.nanoTime();
            inflight = submit(body);
        } catch (JsonProcessingException e) {
            return fail(Failure.PROTOCOL, "request not serialised: " + e.getOriginalMessage());
        } catch (RejectedExecutionException e) {  // closed meanwhile
            return Answer.FAILED;
        }
        return null;
    }

    /** The reply to the call {@link #begin} sent, checked: the host's answer, or why it is none. */
    private Answer accept(String text) {
        long back = callBack;
        long parsing = System.nanoTime();
        JsonNode reply;
        try {
            reply = JSON.readTree(text);
        } catch (JsonProcessingException e) {
            return fail(Failure.PROTOCOL, "malformed policy reply: " + e.getOriginalMessage());
        }
        if (reply.path("v").asInt(-1) != Protocol.VERSION) {
            return fail(Failure.PROTOCOL, "policy host speaks protocol v" + reply.path("v").asText("?")
                    + ", plugin v" + Protocol.VERSION);
        }
        if (!reply.hasNonNull("error") && reply.path("round").asLong(-1) != callRound) {
            return fail(Failure.PROTOCOL, "reply names round " + reply.path("round").asText("(none)")
                    + " in answer to round " + callRound);
        }
        if (reply.hasNonNull("error")) {
            return fail(Failure.POLICY_ERROR, "policy error: " + reply.get("error").asText());
        }
        if (reply.path("resync").asBoolean(false)) {
            return Answer.FAILED;
        }
        needSnapshot = false;
        ackedEpoch = callEpoch;
        long parseUs = (System.nanoTime() - parsing) / 1000;
        stats.policyRound((back - callStart) / 1000 + parseUs, new BridgeStats.CallParts((callSent - callStart) / 1000,
                (back - callSent) / 1000, reply.path("host_us").asLong(-1), parseUs));
        recovered();
        return new Answer(reply, false);
    }

    /** The call on the call thread; once it finishes, a round left waiting for it is offered again. */
    private Future<String> submit(String body) {
        sentMs = System.currentTimeMillis();
        callFinished = false;
        return caller.submit(() -> {
            try {
                return transport.call(body);
            } finally {
                callBack = System.nanoTime();
                callFinished = true;
                reofferIfWaiting();
            }
        });
    }

    private void reofferIfWaiting() {
        Runnable reoffer = reofferWhenAnswered.getAndSet(null);
        if (reoffer != null) {
            reoffer.run();
        }
    }

    /**
     * The call is late: the round launches nothing and waits for it while it has been out for at
     * most {@code late.limit} (a placing round is offered again when it finishes; a report's events
     * reached the host if it answers); past that the call has failed.
     */
    private Answer late(String reason, Runnable reoffer) {
        if (System.currentTimeMillis() - sentMs > conf.lateLimitMs) {
            return fail(Failure.DEADLINE, reason + ", out for over " + conf.lateLimitMs + " ms");
        }
        boolean warn = warned.add(Failure.DEADLINE);
        if (warn) {
            LOG.warn("schedbridge: {}; such rounds launch nothing until it answers, and fall back to Spark's own "
                    + "scheduling while a call has been out for over {} ms (warned once)", reason, conf.lateLimitMs);
        }
        stats.lateRound(warn);
        if (placing) {
            reofferWhenAnswered.set(reoffer);
            if (callFinished) {  // the call thread may have looked before the set (its Future not done yet)
                reofferIfWaiting();
            }
        }
        return Answer.LATE;
    }

    /** True if a finished call got a regular reply (so the host applied the events it carried). */
    private static boolean answered(Future<String> call) {
        try {
            JsonNode reply = JSON.readTree(call.get());
            return reply.path("v").asInt(-1) == Protocol.VERSION && !reply.hasNonNull("error")
                    && !reply.path("resync").asBoolean(false);
        } catch (ExecutionException | JsonProcessingException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * At application start: reach the host and have it accept this application's policy and
     * parameters. A refusal, or no answer within the start timeout, stops the application with the
     * host's reason, unless {@code spark.schedbridge.fallback=true} (then rounds fall back, counted).
     * A connection that fails is retried every {@code retry.wait} within the start timeout: a daemon
     * being restarted, or a loaded machine, must not end an application that would have reached it.
     */
    void start() {
        try {
            connectWithin(conf.startTimeoutMs);
            connectAndAttach(conf.startTimeoutMs);
            LOG.info("schedbridge: policy {} {} hosted by {}", conf.policy, conf.params, endpoint.description);
            return;
        } catch (Refused e) {
            if (!conf.fallback) {
                throw new IllegalArgumentException("schedbridge: the policy host refused this application's "
                        + "configuration: " + e.getMessage() + " (policy parameters are "
                        + BridgeConf.POLICY_PREFIX + "<param>)");
            }
            startFailed(Failure.REFUSED, "policy host refused this application: " + e.getMessage());
        } catch (IOException | ExecutionException | TimeoutException e) {
            String reason = e instanceof TimeoutException ? "no answer within " + conf.startTimeoutMs + " ms" : e.getMessage();
            if (!conf.fallback) {
                throw new IllegalStateException("schedbridge: the policy host (" + endpoint.description + ") did not "
                        + "answer at start: " + reason + " (set " + BridgeConf.PREFIX + "fallback=true to run on Spark's own "
                        + "scheduling while it is unreachable)", e);
            }
            startFailed(Failure.UNREACHABLE, "policy host unreachable: " + reason);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("schedbridge: interrupted while reaching the policy host");
        }
    }

    /**
     * Connects, retrying every {@code retry.wait} until {@code timeoutMs} has passed; the last failure
     * if none succeeds. A host certificate this side refuses fails at once: a configuration mistake.
     */
    private void connectWithin(int timeoutMs) throws IOException, InterruptedException {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (true) {
            try {
                transport.connect();
                return;
            } catch (IOException e) {
                if (TlsTrust.refused(e) || System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(conf.retryMs) > end) {
                    throw e;
                }
                LOG.warn("schedbridge: the policy host ({}) did not answer: {}; retrying in {} ms",
                        endpoint.description, e.getMessage(), conf.retryMs);
                Thread.sleep(conf.retryMs);
            }
        }
    }

    /** Connects if needed and, on a new connection, attaches within {@code timeoutMs}; returns the epoch. */
    private long connectAndAttach(int timeoutMs)
            throws IOException, ExecutionException, TimeoutException, InterruptedException, Refused {
        long epoch = transport.connect();
        if (epoch != warmEpoch) {
            attach(timeoutMs);
            warmEpoch = epoch;
        }
        return epoch;
    }

    /** The attach message through the call thread; throws {@link Refused} if the host refuses. */
    private void attach(int timeoutMs)
            throws ExecutionException, TimeoutException, InterruptedException, IOException, Refused {
        ObjectNode msg = JSON.createObjectNode().put("v", Protocol.VERSION).put("kind", "attach")
                .put("app", app);
        putConf(msg);
        String body = JSON.writeValueAsString(msg);
        inflight = submit(body);  // a late attach keeps later rounds off the transport
        JsonNode reply = JSON.readTree(inflight.get(timeoutMs, TimeUnit.MILLISECONDS));
        if (reply.path("v").asInt(-1) != Protocol.VERSION) {
            throw new IOException("the policy host speaks protocol v" + reply.path("v").asText("?") + ", the plugin v"
                    + Protocol.VERSION + " (use the same schedbridge version for both)");
        }
        if (reply.hasNonNull("refused")) {
            throw new Refused(reply.get("refused").asText());
        }
        if (!reply.path("attached").asBoolean(false)) {
            throw new IOException("unexpected answer to attach: " + reply);
        }
        launchReports = reply.path("launch_reports").asBoolean(false);
    }

    /**
     * True if the host asked, at attach, for launches as soon as they happen (a preempting
     * policy's node side shrinks a queued task's container once it knows which one runs it).
     */
    boolean wantsLaunchReports() {
        return launchReports;
    }

    private void putConf(ObjectNode out) {
        out.put("policy", conf.policy);
        ObjectNode params = out.putObject("params");
        for (Map.Entry<String, String> kv : conf.params.entrySet()) {
            params.put(kv.getKey(), kv.getValue());
        }
    }

    /** With fallback=true, a failed start is warned about like a failed round (no round is counted). */
    private void startFailed(Failure kind, String reason) {
        degraded = true;
        warned.add(kind);
        LOG.warn("schedbridge: {}; such rounds fall back to Spark's own scheduling (warned once)", reason);
        stats.warning(reason);
    }

    private Answer fail(Failure kind, String reason) {
        failedRounds++;
        degraded = true;
        boolean warn = warned.add(kind);
        if (warn) {
            LOG.warn("schedbridge: {}; such rounds fall back to Spark's own scheduling (warned once)", reason);
        } else {
            LOG.debug("schedbridge: fallback round: {}", reason);
        }
        if (placing) {
            stats.fallback(reason, warn);
        } else {
            stats.reportFailed(reason, warn);
        }
        return Answer.FAILED;
    }

    private void recovered() {
        if (degraded) {
            LOG.info("schedbridge: policy answering again after {} failed call(s)", failedRounds);
            degraded = false;
            failedRounds = 0;
        }
    }

    /** The application ended: the host may drop its state (best effort, bounded by the I/O timeout). */
    void detach(String appId) {
        if (appId == null || warmEpoch < 0) {
            return;
        }
        try {
            transport.call(JSON.writeValueAsString(JSON.createObjectNode().put("v", Protocol.VERSION)
                    .put("kind", "detach").put("app", appId)));
        } catch (IOException e) {
            LOG.debug("schedbridge: detach not delivered: {}", e.toString());
        }
    }

    @Override
    public void close() {
        caller.shutdownNow();
        endpoint.close();
    }
}
