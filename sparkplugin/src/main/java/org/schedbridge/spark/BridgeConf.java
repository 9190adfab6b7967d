package org.schedbridge.spark;

import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.spark.SparkConf;
import scala.Tuple2;

/** The {@code spark.schedbridge.*} keys, read once when the scheduler is created. */
public final class BridgeConf {
    public static final String PREFIX = "spark.schedbridge.";
    /** The plugin starts a policy host process beside the driver (the default endpoint). */
    public static final String LOCAL = "local";
    /** The PySpark driver of this JVM hosts the policy ({@code bridge.live.spark_inprocess}). */
    public static final String INPROCESS = "inprocess";
    /**
     * Keys the plugin itself uses; every other {@code spark.schedbridge.X} is a policy parameter.
     * The same list is {@code sparkplugin.PLUGIN_KEYS} in Python.
     */
    private static final Set<String> RESERVED = Set.of("policy", "endpoint", "token", "token.file", "fallback", "python",
            "host.log", "stats.file", "deadline.ms", "io.timeout.ms", "retry.ms", "revive.ms", "start.timeout.ms",
            "max.kills.per.round", "max.kills.per.task", "hold.max.ms");

    public final String policy;
    /** Policy parameters, sorted by name so the messages are deterministic. */
    public final Map<String, String> params;
    /** {@code local} (a host process beside the driver), {@code inprocess} or {@code tcp://host:port}. */
    public final String endpoint;
    /** The daemon's token: {@code token}, else the first line of {@code token.file}. */
    public final String token;
    public final String tokenFile;
    /** Opt-in: a host that refuses or never answers at start means Spark's own scheduling, not a stop. */
    public final boolean fallback;
    /** The Python that runs the {@code local} host (it must have schedbridge installed). */
    public final String python;
    /** Where the {@code local} host logs (at INFO: every placement); empty: a temporary file, WARN only. */
    public final String hostLog;
    /** Where the counters are written as JSON when the application stops; empty: nowhere. */
    public final String statsFile;
    /** Budget for one offer round's policy call; past it the round falls back to Spark. */
    public final int deadlineMs;
    /** How long a call to the daemon may take before the connection is considered dead. */
    public final int ioTimeoutMs;
    /** Minimum pause between two attempts to reach an unreachable policy. */
    public final int retryMs;
    /** After a round in which the policy held free slots back, ask for a new round this soon. */
    public final int reviveMs;
    /** Bound on starting the local host and on the first attach, at application start. */
    public final int startTimeoutMs;
    /** Most task kills (preemptions) one reply may cause, and one task may suffer over its attempts. */
    public final int maxKillsPerRound;
    public final int maxKillsPerTask;
    /** Watchdog: free slots held back while tasks wait longer than this, and the next round is Spark's. */
    public final int holdMaxMs;

    private BridgeConf(SparkConf conf) {
        Map<String, String> all = new TreeMap<>();
        for (Tuple2<String, String> kv : conf.getAllWithPrefix(PREFIX)) {
            all.put(kv._1(), kv._2());
        }
        policy = all.getOrDefault("policy", "fifo");
        endpoint = all.getOrDefault("endpoint", LOCAL);
        token = all.getOrDefault("token", "");
        tokenFile = all.getOrDefault("token.file", System.getProperty("user.home") + "/.schedbridge/serve-token");
        fallback = bool(all, "fallback");
        python = all.getOrDefault("python", defaultPython(conf));
        hostLog = all.getOrDefault("host.log", "");
        statsFile = all.getOrDefault("stats.file", "");
        deadlineMs = positive(all, "deadline.ms", 50);
        ioTimeoutMs = positive(all, "io.timeout.ms", 2000);
        retryMs = positive(all, "retry.ms", 1000);
        reviveMs = positive(all, "revive.ms", 100);
        startTimeoutMs = positive(all, "start.timeout.ms", 60000);
        maxKillsPerRound = positive(all, "max.kills.per.round", 16);
        maxKillsPerTask = positive(all, "max.kills.per.task", 3);
        holdMaxMs = positive(all, "hold.max.ms", 30000);
        all.keySet().removeAll(RESERVED);
        params = all;
    }

    public static BridgeConf from(SparkConf conf) {
        return new BridgeConf(conf);
    }

    /** The driver's Python as Spark itself chooses it, else {@code python3}. */
    private static String defaultPython(SparkConf conf) {
        String[] candidates = {System.getenv("SCHEDBRIDGE_PYTHON"), conf.get("spark.pyspark.driver.python", null),
            conf.get("spark.pyspark.python", null), System.getenv("PYSPARK_DRIVER_PYTHON"), System.getenv("PYSPARK_PYTHON")};
        for (String c : candidates) {
            if (c != null && !c.isBlank()) {
                return c;
            }
        }
        return "python3";
    }

    private static boolean bool(Map<String, String> all, String key) {
        String raw = all.getOrDefault(key, "false").trim();
        if (raw.equalsIgnoreCase("true") || raw.equalsIgnoreCase("false")) {
            return Boolean.parseBoolean(raw);
        }
        throw new IllegalArgumentException("schedbridge: " + PREFIX + key + " must be true or false, got '" + raw + "'");
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
        throw new IllegalArgumentException("schedbridge: " + PREFIX + key + " must be a positive integer, got '" + raw + "'");
    }
}
