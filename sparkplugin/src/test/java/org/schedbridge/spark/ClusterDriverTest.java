package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;

/** Cluster deploy mode's entry point: a Python file through PythonRunner, or a JVM main class. */
class ClusterDriverTest {
    private static final String PY_FILE = BridgeConf.PREFIX + "cluster.pyFile";
    private static final String MAIN_CLASS = BridgeConf.PREFIX + "cluster.mainClass";

    private static SparkConf props(String... kv) {
        SparkConf conf = new SparkConf(false);
        for (int i = 0; i < kv.length; i += 2) {
            conf.set(kv[i], kv[i + 1]);
        }
        return conf;
    }

    @Test
    void aPythonFileRunsThroughSparksPythonRunnerWithItsPyFilesAndArguments() {
        ClusterDriver.Plan plan = ClusterDriver.plan(props(PY_FILE, "pi.py",
                "spark.submit.pyFiles", "lib.zip"), new String[] {"20", "--out", "x"});
        assertEquals("org.apache.spark.deploy.PythonRunner", plan.mainClass());
        assertArrayEquals(new String[] {"pi.py", "lib.zip", "20", "--out", "x"}, plan.args());
    }

    @Test
    void aJvmMainClassGetsTheArgumentsAsTheyAre() {
        ClusterDriver.Plan plan = ClusterDriver.plan(props(MAIN_CLASS, "SumApp"), new String[] {"1"});
        assertEquals("SumApp", plan.mainClass());
        assertArrayEquals(new String[] {"1"}, plan.args());
    }

    @Test
    void neitherOrBothIsAnErrorNamingTheKeys() {
        for (SparkConf p : new SparkConf[] {props(), props(PY_FILE, "a.py", MAIN_CLASS, "M")}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> ClusterDriver.plan(p, new String[0]));
            assertTrue(e.getMessage().contains(PY_FILE) && e.getMessage().contains(MAIN_CLASS));
        }
    }
}
