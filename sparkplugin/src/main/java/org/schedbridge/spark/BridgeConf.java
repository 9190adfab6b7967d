package org.schedbridge.spark;

import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.spark.SparkConf;
import scala.Tuple2;

/** The {@code spark.schedbridge.*} keys, read once when the scheduler is created. */
public final class BridgeConf {
    public static final String PREFIX = "spark.schedbridge.";
    /** Keys the plugin itself uses; every other {@code spark.schedbridge.X} is a policy parameter. */
    private static final Set<String> RESERVED =
            Set.of("policy", "endpoint", "token", "deadline.ms", "io.timeout.ms", "retry.ms", "revive.ms");

    public final String policy;
    /** Policy parameters, sorted by name so the messages are deterministic. */
    public final Map<String, String> params;
    /** {@code inprocess} (a PySpark driver hosts the policy) or {@code tcp://host:port} (the daemon). */
    public final String endpoint;
    public final String token;
    /** Budget for one offer round's policy call; past it the round falls back to Spark. */
    public final int deadlineMs;
    /** How long a call to the daemon may take before the connection is considered dead. */
    public final int ioTimeoutMs;
    /** Minimum pause between two attempts to reach an unreachable policy. */
    public final int retryMs;
    /** After a round in which the policy held free slots back, ask for a new round this soon. */
    public final int reviveMs;

    private BridgeConf(SparkConf conf) {
        Map<String, String> all = new TreeMap<>();
        for (Tuple2<String, String> kv : conf.getAllWithPrefix(PREFIX)) {
            all.put(kv._1(), kv._2());
        }
        policy = all.getOrDefault("policy", "fifo");
        endpoint = all.getOrDefault("endpoint", "inprocess");
        token = all.getOrDefault("token", "");
        deadlineMs = positive(all, "deadline.ms", 50);
        ioTimeoutMs = positive(all, "io.timeout.ms", 2000);
        retryMs = positive(all, "retry.ms", 1000);
        reviveMs = positive(all, "revive.ms", 100);
        all.keySet().removeAll(RESERVED);
        params = all;
    }

    public static BridgeConf from(SparkConf conf) {
        return new BridgeConf(conf);
    }

    private static int positive(Map<String, String> all, String key, int dflt) {
        String raw = all.get(key);
        if (raw == null) {
            return dflt;
        }
        try {
            int v = Integer.parseInt(raw.trim());
            if (v > 0) {
                return v;
            }
        } catch (NumberFormatException ignored) {
            // reported below
        }
        throw new IllegalArgumentException(PREFIX + key + " must be a positive integer, got '" + raw + "'");
    }
}
