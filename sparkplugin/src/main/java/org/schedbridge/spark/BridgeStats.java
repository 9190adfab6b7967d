package org.schedbridge.spark;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Counters of the current scheduler, read from Python (tests, benchmark) as a JSON string:
 * policy rounds, fallback rounds, warnings logged and the latency of recent policy calls.
 */
public final class BridgeStats {
    private static final int WINDOW = 1 << 16;
    private static BridgeStats current = new BridgeStats();

    private long policyRounds;
    private long fallbackRounds;
    private long warnings;
    private String lastFailure = "";
    private final long[] callMicros = new long[WINDOW];
    private long calls;

    static synchronized BridgeStats reset() {
        current = new BridgeStats();
        return current;
    }

    synchronized void policyRound(long micros) {
        policyRounds++;
        callMicros[(int) (calls++ % WINDOW)] = micros;
    }

    synchronized void fallback(String reason, boolean warned) {
        fallbackRounds++;
        lastFailure = reason;
        if (warned) {
            warnings++;
        }
    }

    /** JSON: counters plus {@code call_us}, the latencies (µs) of up to the last 65,536 policy calls. */
    public static synchronized String json() {
        BridgeStats s = current;
        synchronized (s) {
            ObjectNode out = JsonNodeFactory.instance.objectNode();
            out.put("policy_rounds", s.policyRounds).put("fallback_rounds", s.fallbackRounds)
                    .put("warnings", s.warnings).put("last_failure", s.lastFailure);
            var arr = out.putArray("call_us");
            long n = Math.min(s.calls, WINDOW);
            for (long i = s.calls - n; i < s.calls; i++) {
                arr.add(s.callMicros[(int) (i % WINDOW)]);
            }
            return out.toString();
        }
    }
}
