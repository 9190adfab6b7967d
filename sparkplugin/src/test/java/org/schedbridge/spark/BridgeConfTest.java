package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;

/** The {@code spark.schedbridge.*} keys: their defaults, and a bad value refused naming its key. */
class BridgeConfTest {
    private static BridgeConf read(String... keyValues) {
        SparkConf conf = new SparkConf(false);
        for (int i = 0; i < keyValues.length; i += 2) {
            conf.set(BridgeConf.PREFIX + keyValues[i], keyValues[i + 1]);
        }
        return BridgeConf.from(conf);
    }

    private static String refusal(String key, String value) {
        return assertThrows(IllegalArgumentException.class, () -> read(key, value)).getMessage();
    }

    @Test
    void defaults() {
        BridgeConf c = read();
        assertEquals("fifo", c.policy);
        assertEquals(BridgeConf.LOCAL, c.endpoint);
        assertEquals("", c.token);
        assertEquals(System.getProperty("user.home") + "/.schedbridge/serve-token", c.tokenFile);
        assertFalse(c.fallback);
        assertEquals("", c.hostLog);
        assertEquals("", c.statsFile);
        assertEquals(50, c.deadlineMs);
        assertEquals(2000, c.ioTimeoutMs);
        assertEquals(1000, c.retryMs);
        assertEquals(100, c.reviveMs);
        assertEquals(60_000, c.startTimeoutMs);
        assertEquals(16, c.maxKillsPerRound);
        assertEquals(3, c.maxKillsPerTask);
        assertEquals(30_000, c.holdMaxMs);
        assertTrue(c.launchAhead);
        assertEquals(100, c.launchAheadMaxWaitMs);
        assertTrue(c.params.isEmpty(), c.params.toString());
    }

    @Test
    void valuesAreRead() {
        BridgeConf c = read("policy", "hawk", "endpoint", "tcp://daemon:7077", "fallback", "TRUE",
                "python", "/opt/py/bin/python", "max.kills.per.round", " 4 ", "max.kills.per.task", "1",
                "launch.ahead", "false");
        assertEquals("hawk", c.policy);
        assertEquals("tcp://daemon:7077", c.endpoint);
        assertTrue(c.fallback);
        assertFalse(c.launchAhead);
        assertEquals("/opt/py/bin/python", c.python);
        assertEquals(4, c.maxKillsPerRound);
        assertEquals(1, c.maxKillsPerTask);
    }

    @Test
    void aCountThatIsNotAPositiveIntegerIsRefusedNamingTheKey() {
        for (String bad : new String[] {"0", "-2", "many", "1.5"}) {
            assertEquals("schedbridge: spark.schedbridge.max.kills.per.round must be a positive integer, got '"
                    + bad + "'", refusal("max.kills.per.round", bad));
        }
    }

    @Test
    void aFlagThatIsNotTrueOrFalseIsRefusedNamingTheKey() {
        assertEquals("schedbridge: spark.schedbridge.fallback must be true or false, got 'yes'", refusal("fallback", "yes"));
    }

    @Test
    void durationsAreSparkTimeStrings() {
        BridgeConf c = read("deadline", "75ms", "io.timeout", "3s", "retry.wait", "1min", "revive.interval", " 250 ",
                "start.timeout", "2M", "hold.max", "1500us", "launch.ahead.max.wait", "1s");
        assertEquals(75, c.deadlineMs);
        assertEquals(3000, c.ioTimeoutMs);
        assertEquals(60_000, c.retryMs);
        assertEquals(250, c.reviveMs);  // a bare number is milliseconds
        assertEquals(120_000, c.startTimeoutMs);
        assertEquals(1, c.holdMaxMs);
        assertEquals(1000, c.launchAheadMaxWaitMs);
    }

    @Test
    void aDurationSparkCannotReadOrOutOfRangeIsRefusedNamingTheKeyAndValue() {
        for (String bad : new String[] {"soon", "1.5s", "0ms", "-2s", "999us", "25d"}) {
            assertEquals("schedbridge: spark.schedbridge.deadline must be a Spark time string from 1ms to 24d such as "
                    + "50ms, 2s or 1min (a bare number is ms), got '" + bad + "'", refusal("deadline", bad));
        }
    }

    @Test
    void theOldMillisecondKeysAreRefusedNamingTheNewOnes() {
        String[][] renamed = {{"deadline.ms", "deadline"}, {"io.timeout.ms", "io.timeout"}, {"retry.ms", "retry.wait"},
            {"revive.ms", "revive.interval"}, {"start.timeout.ms", "start.timeout"}, {"hold.max.ms", "hold.max"}};
        for (String[] r : renamed) {
            assertEquals("schedbridge: spark.schedbridge." + r[0] + " is now spark.schedbridge." + r[1]
                    + ", a Spark time string (e.g. 50ms, 2s; a bare number is milliseconds)", refusal(r[0], "50"));
        }
    }

    @Test
    void theKeysFileGivesEachKeyAKindAndRenamesOnlyToDurations() {
        assertEquals(java.util.Set.of("text", "flag", "count", "duration"), java.util.Set.copyOf(BridgeConf.KEYS.values()));
        for (String now : BridgeConf.RENAMED.values()) {
            assertEquals("duration", BridgeConf.KEYS.get(now), now);
        }
    }

    @Test
    void policyParametersHaveTheirOwnPrefix() {
        BridgeConf c = read("policy", "hawk", "policy.cutoff", "0.5", "policy.seed", "3");
        assertEquals("hawk", c.policy);
        assertEquals(java.util.Map.of("cutoff", "0.5", "seed", "3"), c.params);
    }

    @Test
    void aParameterWithoutThePrefixIsRefusedNamingThePrefixedKey() {
        assertEquals("schedbridge: spark.schedbridge.cutoff is not a plugin key; policy parameters are "
                + "spark.schedbridge.policy.<param>: did you mean spark.schedbridge.policy.cutoff?", refusal("cutoff", "1"));
    }

    @Test
    void anUnknownDottedKeyIsRefusedListingThePluginKeys() {
        String message = refusal("token.fle", "t");
        assertTrue(message.startsWith("schedbridge: unknown key spark.schedbridge.token.fle: the plugin's keys are "
                + "agents, cluster.mainClass, cluster.pyFile, deadline, endpoint, estimates, fallback, hold.max, host.log, "),
                message);
    }

    @Test
    void theEstimatesFileGoesToTheHostAsTheAdapterParameter() {
        SparkConf conf = new SparkConf(false).set("spark.schedbridge.policy", "hawk")
                .set("spark.schedbridge.estimates", "/data/estimates.json");
        assertEquals("/data/estimates.json", BridgeConf.from(conf).params.get("estimates"));
    }

    @Test
    void theEstimatesFileIsGivenOnce() {
        SparkConf conf = new SparkConf(false).set("spark.schedbridge.policy", "hawk")
                .set("spark.schedbridge.estimates", "a.json").set("spark.schedbridge.policy.estimates", "b.json");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> BridgeConf.from(conf));
        assertTrue(e.getMessage().contains("not both"), e.getMessage());
    }
}
