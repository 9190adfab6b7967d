package org.schedbridge.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.spark.network.util.JavaUtils;
import org.apache.spark.SparkConf;
import scala.Tuple2;

/**
 * The {@code spark.schedbridge.*} keys, read once when the scheduler is created. Durations are Spark
 * time strings ({@code 50ms}, {@code 2s}, {@code 1min}; a bare number is milliseconds), read by Spark's
 * own parser; the policy's parameters are {@code spark.schedbridge.policy.<param>}. The keys and their
 * kinds are listed once, in the resource {@code conf-keys.json}, which {@code sparkplugin.PLUGIN_KEYS}
 * in Python reads too (its preflight check gives the same refusals).
 */
public final class BridgeConf {
    public static final String PREFIX = "spark.schedbridge.";
    /** The plugin starts a policy host process beside the driver (the default endpoint). */
    public static final String LOCAL = "local";
    /** The PySpark driver of this JVM hosts the policy ({@code bridge.plugin.inprocess}). */
    public static final String INPROCESS = "inprocess";
    /** {@code spark.schedbridge.policy.<param>}: the policy's parameters, passed on as they are. */
    private static final String PARAMS = "policy.";
    public static final String POLICY_PREFIX = PREFIX + PARAMS;
    /** {@code spark.schedbridge.estimates}: a runtime-estimates file, handed to the policy host as its adapter parameter. */
    static final String ESTIMATES = "estimates";
    /** The value forms named in refusals; {@code sparkplugin.VALUE_FORMS} in Python says the same. */
    private static final String FLAG = "true or false";
    private static final String COUNT = "a positive integer";
    private static final String DURATION =
            "a Spark time string from 1ms to 24d such as 50ms, 2s or 1min (a bare number is ms)";
    /** The plugin's own keys (after the prefix) -> how each is read: text, flag, count or duration. */
    static final Map<String, String> KEYS;
    /** Keys that were integer milliseconds, old name -> the new one (a Spark time string). */
    static final Map<String, String> RENAMED;

    static {
        JsonNode listed = resource("conf-keys.json");
        KEYS = strings(listed.get("keys"));
        RENAMED = strings(listed.get("renamed"));
    }

    public final String policy;
    /** Policy parameters, sorted by name so the messages are deterministic. */
    public final Map<String, String> params;
    /** {@code local} (a host process beside the driver), {@code inprocess}, {@code tcp://host:port} or {@code tls://host:port}. */
    public final String endpoint;
    /** PEM certificates a {@code tls://} endpoint is verified against; empty: the JVM's trust store. */
    public final String tlsCa;
    /** The daemon's token: {@code token}, else the first line of {@code token.file}. */
    public final String token;
    public final String tokenFile;
    /** Opt-in: a host that refuses or never answers at start means Spark's own scheduling, not a stop. */
    public final boolean fallback;
    /**
     * A freed slot takes a task of the stage the policy last placed on its executor at once, and the
     * policy confirms it after the fact (else the task is withdrawn): a task end waits for no round trip.
     * On unless {@code launch.ahead=false}: the host stops predicting for an application whose launches
     * ahead mostly miss, so a policy that decides elsewhere loses a few launches, not every one.
     */
    public final boolean launchAhead;
    /** {@code launch.ahead.max.wait}: the longest a launch ahead's news waits to go out while the policy's predictions hold. */
    public final int launchAheadMaxWaitMs;
    /** The Python that runs the {@code local} host (it must have schedbridge installed). */
    public final String python;
    /** Cluster deploy mode: the application {@link ClusterDriver} runs, a Python file or a JVM main class. */
    public final String clusterPyFile;
    public final String clusterMainClass;
    /** Where the {@code local} host logs (at INFO: every placement); empty: a temporary file, WARN only. */
    public final String hostLog;
    /** The cluster's node agents file for the {@code local} host (a preempting policy); empty: $SCHEDBRIDGE_AGENTS. */
    public final String agents;
    /** Where the counters are written as JSON when the application stops; empty: nowhere. */
    public final String statsFile;
    /** Budget for one offer round's policy call; past it the round waits for the late answer. */
    public final int deadlineMs;
    /** How long rounds wait for a late policy call, from when it was sent, before they fall back to Spark. */
    public final int lateLimitMs;
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
        Keys keys = new Keys(conf);
        policy = keys.text("policy", "fifo");
        endpoint = keys.text("endpoint", LOCAL);
        tlsCa = keys.text("tls.ca", "");
        token = keys.text("token", "");
        tokenFile = keys.text("token.file", System.getProperty("user.home") + "/.schedbridge/serve-token");
        fallback = keys.flag("fallback", false);
        launchAhead = keys.flag("launch.ahead", true);
        launchAheadMaxWaitMs = keys.millis("launch.ahead.max.wait", "100ms");
        python = keys.text("python", defaultPython(conf));
        clusterPyFile = keys.text("cluster.pyFile", "");
        clusterMainClass = keys.text("cluster.mainClass", "");
        hostLog = keys.text("host.log", "");
        agents = keys.text("agents", "");
        statsFile = keys.text("stats.file", "");
        deadlineMs = keys.millis("deadline", "50ms");
        lateLimitMs = keys.millis("late.limit", "1s");
        ioTimeoutMs = keys.millis("io.timeout", "2s");
        retryMs = keys.millis("retry.wait", "1s");
        reviveMs = keys.millis("revive.interval", "100ms");
        startTimeoutMs = keys.millis("start.timeout", "60s");
        maxKillsPerRound = keys.count("max.kills.per.round", 16);
        maxKillsPerTask = keys.count("max.kills.per.task", 3);
        holdMaxMs = keys.millis("hold.max", "30s");
        String estimates = keys.text("estimates", "").trim();
        Map<String, String> policyParams = keys.policyParams();
        if (!estimates.isEmpty()) {
            if (policyParams.containsKey(ESTIMATES)) {
                throw new IllegalArgumentException("schedbridge: set " + PREFIX + ESTIMATES + " or " + POLICY_PREFIX
                        + ESTIMATES + ", not both");
            }
            policyParams.put(ESTIMATES, estimates);
        }
        params = policyParams;
    }

    public static BridgeConf from(SparkConf conf) {
        return new BridgeConf(conf);
    }

    /** A JSON resource of this package (in the plugin's jar). */
    static JsonNode resource(String name) {
        try (InputStream in = BridgeConf.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("schedbridge: the plugin's resource " + name + " is missing");
            }
            return new ObjectMapper().readTree(in);
        } catch (IOException e) {
            throw new IllegalStateException("schedbridge: cannot read the plugin's resource " + name + ": " + e, e);
        }
    }

    private static Map<String, String> strings(JsonNode object) {
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : object.properties()) {
            out.put(e.getKey(), e.getValue().asText());
        }
        return Collections.unmodifiableMap(out);
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

    /**
     * The {@code spark.schedbridge.*} entries, read key by key, each as its kind in {@link #KEYS}; any
     * other key but a policy parameter is refused, since Spark itself would silently ignore a
     * misspelled or old one. A key read as another kind than listed, or listed and never read, is
     * the plugin's own mistake: every BridgeConf made (each test) would fail on it.
     */
    private static final class Keys {
        private final Map<String, String> all = new TreeMap<>();
        private final Set<String> read = new TreeSet<>();

        Keys(SparkConf conf) {
            for (Tuple2<String, String> kv : conf.getAllWithPrefix(PREFIX)) {
                all.put(kv._1(), kv._2());
            }
        }

        String text(String key, String dflt) {
            return raw(key, "text", dflt);
        }

        private String raw(String key, String kind, String dflt) {
            if (!kind.equals(KEYS.get(key))) {
                throw new IllegalStateException("schedbridge: " + key + " is read as " + kind + " but conf-keys.json "
                        + "lists it as " + KEYS.get(key));
            }
            read.add(key);
            return all.getOrDefault(key, dflt);
        }

        boolean flag(String key, boolean dflt) {
            String raw = raw(key, "flag", Boolean.toString(dflt)).trim();
            if (raw.equalsIgnoreCase("true") || raw.equalsIgnoreCase("false")) {
                return Boolean.parseBoolean(raw);
            }
            throw refused(key, FLAG);
        }

        int count(String key, int dflt) {
            String raw = raw(key, "count", Integer.toString(dflt));
            try {
                int v = Integer.parseInt(raw.trim());
                if (v > 0) {
                    return v;
                }
            } catch (NumberFormatException ignored) {
                // refused below
            }
            throw refused(key, COUNT);
        }

        /** A Spark time string, read by Spark's own parser, as milliseconds in 1 .. Integer.MAX_VALUE. */
        int millis(String key, String dflt) {
            String raw = raw(key, "duration", dflt);
            try {
                long v = JavaUtils.timeStringAsMs(raw);
                if (v > 0 && v <= Integer.MAX_VALUE) {
                    return (int) v;
                }
            } catch (NumberFormatException ignored) {
                // refused below
            }
            throw refused(key, DURATION);
        }

        private IllegalArgumentException refused(String key, String form) {
            return new IllegalArgumentException("schedbridge: " + PREFIX + key + " must be " + form + ", got '"
                    + all.get(key) + "'");
        }

        /** The policy parameters by name, once every other key was read; an unknown key is refused. */
        Map<String, String> policyParams() {
            if (!read.equals(KEYS.keySet())) {
                throw new IllegalStateException("schedbridge: conf-keys.json lists " + KEYS.keySet() + ", the plugin reads "
                        + read);
            }
            Map<String, String> params = new TreeMap<>();
            for (Map.Entry<String, String> e : all.entrySet()) {
                String name = e.getKey();
                if (name.startsWith(PARAMS)) {
                    params.put(name.substring(PARAMS.length()), e.getValue());
                } else if (!KEYS.containsKey(name)) {
                    throw new IllegalArgumentException("schedbridge: " + unknown(name));
                }
            }
            return params;
        }

        /** Why {@code spark.schedbridge.<name>} is refused; {@code sparkplugin.unknown_key_message} in Python. */
        private String unknown(String name) {
            if (RENAMED.containsKey(name)) {
                return PREFIX + name + " is now " + PREFIX + RENAMED.get(name)
                        + ", a Spark time string (e.g. 50ms, 2s; a bare number is milliseconds)";
            }
            if (name.matches("[A-Za-z_][A-Za-z0-9_]*")) {
                return PREFIX + name + " is not a plugin key; policy parameters are " + POLICY_PREFIX
                        + "<param>: did you mean " + POLICY_PREFIX + name + "?";
            }
            return "unknown key " + PREFIX + name + ": the plugin's keys are "
                    + String.join(", ", new TreeSet<>(KEYS.keySet())) + ", policy parameters are " + POLICY_PREFIX + "<param>";
        }
    }
}
