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
        assertTrue(c.params.isEmpty(), c.params.toString());
    }

    @Test
    void valuesAreRead() {
        BridgeConf c = read("policy", "hawk", "endpoint", "tcp://daemon:7077", "fallback", "TRUE",
                "python", "/opt/py/bin/python", "max.kills.per.round", " 4 ", "max.kills.per.task", "1");
        assertEquals("hawk", c.policy);
        assertEquals("tcp://daemon:7077", c.endpoint);
        assertTrue(c.fallback);
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
}
