package org.schedbridge.spark;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Counters of the current scheduler, read from Python (tests, benchmark) as a JSON string:
 * policy rounds, fallback rounds, warnings logged, rounds in which the policy held free slots back
 * while tasks were pending, rounds left to Spark's order without asking (the policy declared it),
 * and the latencies of recent policy calls and of whole policy rounds.
 */
public final class BridgeStats {
    private static final int WINDOW = 1 << 16;
    private static BridgeStats current = new BridgeStats();

    private long policyRounds;
    private long fallbackRounds;
    private long warnings;
    private long heldRounds;
    private long sparkOrderRounds;
    private String lastFailure = "";
    private final Window calls = new Window();
    private final Window rounds = new Window();

    /** The last {@link #WINDOW} values of one latency (µs). */
    private static final class Window {
        private final long[] micros = new long[WINDOW];
        private long count;

        void add(long value) {
            micros[(int) (count++ % WINDOW)] = value;
        }

        void into(ArrayNode out) {
            for (long i = count - Math.min(count, WINDOW); i < count; i++) {
                out.add(micros[(int) (i % WINDOW)]);
            }
        }
    }

    static synchronized BridgeStats reset() {
        current = new BridgeStats();
        return current;
    }

    /** A policy call answered in {@code micros} (request serialised, transport, reply parsed). */
    synchronized void policyRound(long micros) {
        policyRounds++;
        calls.add(micros);
    }

    /** A whole policy round took {@code micros} in the scheduler (batch, call, grants applied). */
    synchronized void roundDone(long micros) {
        rounds.add(micros);
    }

    synchronized void heldBack() {
        heldRounds++;
    }

    /** A round left to Spark without asking, because the policy declared Spark's order. */
    synchronized void sparkOrderRound() {
        sparkOrderRounds++;
    }

    synchronized void fallback(String reason, boolean warned) {
        fallbackRounds++;
        lastFailure = reason;
        if (warned) {
            warnings++;
        }
    }

    /** JSON: counters plus {@code call_us} and {@code round_us}, up to the last 65,536 of each. */
    public static synchronized String json() {
        BridgeStats s = current;
        synchronized (s) {
            ObjectNode out = JsonNodeFactory.instance.objectNode();
            out.put("policy_rounds", s.policyRounds).put("fallback_rounds", s.fallbackRounds)
                    .put("warnings", s.warnings).put("held_rounds", s.heldRounds).put("spark_order_rounds", s.sparkOrderRounds)
                    .put("last_failure", s.lastFailure);
            s.calls.into(out.putArray("call_us"));
            s.rounds.into(out.putArray("round_us"));
            return out.toString();
        }
    }
}
