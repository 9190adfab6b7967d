package org.schedbridge.spark;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.EnumSet;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One policy round trip per offer round, guarded: the call runs on its own thread and must answer
 * within the deadline; an unreachable host, an error, a late or malformed reply all make the round
 * fall back to Spark's own scheduling. Each kind of failure is logged as a warning once per
 * application, and the first round after any failure carries the full state so the host rebuilds
 * from Spark's. A new connection is warmed up with a ping (bounded by the I/O timeout) so that
 * setting up py4j or TCP does not count against the first round's deadline.
 */
final class PolicyClient implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PolicyClient.class);
    private static final ObjectMapper JSON = new ObjectMapper();

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
    /** The last call missed its deadline; if it still succeeded, the host's state is current. */
    private boolean late;
    private final EnumSet<Failure> warned = EnumSet.noneOf(Failure.class);
    private boolean degraded;
    private long failedRounds;

    /** Why a round fell back; each is warned about once. */
    enum Failure { UNREACHABLE, DEADLINE, POLICY_ERROR, PROTOCOL }

    PolicyClient(Transport transport, ClusterMirror mirror, BridgeConf conf, BridgeStats stats) {
        this.transport = transport;
        this.mirror = mirror;
        this.conf = conf;
        this.stats = stats;
    }

    /** Sends {@code request} (events or snapshot added here); empty means "fall back this round". */
    Optional<JsonNode> round(ObjectNode request) {
        if (caller.isShutdown()) {  // a re-offer racing SparkContext.stop: Spark winds down on its own
            return Optional.empty();
        }
        if (inflight != null && !inflight.isDone()) {  // checked first: the transport is busy with it
            return fail(Failure.DEADLINE, "previous policy call still running past its " + conf.deadlineMs + " ms deadline");
        }
        long epoch;
        try {
            epoch = transport.connect();
            if (epoch != warmEpoch) {
                warmUp();
                warmEpoch = epoch;
            }
        } catch (IOException | ExecutionException | TimeoutException e) {
            return fail(Failure.UNREACHABLE, "policy host unreachable: " + e.getMessage());
        } catch (RejectedExecutionException e) {  // closed meanwhile
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return fail(Failure.UNREACHABLE, "interrupted");
        }
        if (late) {
            late = false;
            needSnapshot = !answered(inflight);
        }
        boolean snapshot = needSnapshot || epoch != ackedEpoch;
        mirror.drainInto(request, snapshot);
        if (snapshot) {
            putConf(request.putObject("conf"));
        }
        needSnapshot = true;
        long start = System.nanoTime();
        JsonNode reply;
        try {
            String body = JSON.writeValueAsString(request);
            inflight = caller.submit(() -> transport.call(body));
            reply = JSON.readTree(inflight.get(conf.deadlineMs, TimeUnit.MILLISECONDS));
        } catch (RejectedExecutionException e) {  // closed meanwhile
            return Optional.empty();
        } catch (TimeoutException e) {
            late = true;
            return fail(Failure.DEADLINE, "policy call exceeded its " + conf.deadlineMs + " ms deadline");
        } catch (ExecutionException e) {
            return fail(Failure.UNREACHABLE, "policy call failed: " + e.getCause());
        } catch (JsonProcessingException e) {
            return fail(Failure.PROTOCOL, "malformed policy reply: " + e.getOriginalMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return fail(Failure.UNREACHABLE, "interrupted");
        }
        if (reply.path("v").asInt(-1) != Protocol.VERSION) {
            return fail(Failure.PROTOCOL, "policy host speaks protocol v" + reply.path("v").asText("?")
                    + ", plugin v" + Protocol.VERSION);
        }
        if (reply.hasNonNull("error")) {
            return fail(Failure.POLICY_ERROR, "policy error: " + reply.get("error").asText());
        }
        if (reply.path("resync").asBoolean(false)) {
            return Optional.empty();
        }
        needSnapshot = false;
        ackedEpoch = epoch;
        stats.policyRound((System.nanoTime() - start) / 1000);
        recovered();
        return Optional.of(reply);
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

    /** One ping through the call thread on a new connection; throws if no pong in time. */
    private void warmUp() throws ExecutionException, TimeoutException, InterruptedException, IOException {
        ObjectNode ping = JSON.createObjectNode().put("v", Protocol.VERSION).put("kind", "ping");
        String body = JSON.writeValueAsString(ping);
        inflight = caller.submit(() -> transport.call(body));  // a late ping keeps later rounds off the transport
        JsonNode pong = JSON.readTree(inflight.get(conf.ioTimeoutMs, TimeUnit.MILLISECONDS));
        if (!pong.path("pong").asBoolean(false)) {
            throw new IOException("no pong from the policy host: " + pong);
        }
    }

    private void putConf(ObjectNode out) {
        out.put("policy", conf.policy);
        ObjectNode params = out.putObject("params");
        for (Map.Entry<String, String> kv : conf.params.entrySet()) {
            params.put(kv.getKey(), kv.getValue());
        }
    }

    private Optional<JsonNode> fail(Failure kind, String reason) {
        failedRounds++;
        degraded = true;
        boolean warn = warned.add(kind);
        if (warn) {
            LOG.warn("schedbridge: {}; such rounds fall back to Spark's own scheduling (warned once)", reason);
        } else {
            LOG.debug("schedbridge: fallback round: {}", reason);
        }
        stats.fallback(reason, warn);
        return Optional.empty();
    }

    private void recovered() {
        if (degraded) {
            LOG.info("schedbridge: policy answering again after {} fallback round(s)", failedRounds);
            degraded = false;
            failedRounds = 0;
        }
    }

    @Override
    public void close() {
        caller.shutdownNow();
        transport.close();
    }
}
