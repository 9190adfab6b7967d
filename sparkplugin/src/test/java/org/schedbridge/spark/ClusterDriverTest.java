package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Properties;
import org.junit.jupiter.api.Test;

/** Cluster deploy mode's entry point: a Python file through PythonRunner, or a JVM main class. */
class ClusterDriverTest {
    private static Properties props(String... kv) {
        Properties p = new Properties();
        for (int i = 0; i < kv.length; i += 2) {
            p.setProperty(kv[i], kv[i + 1]);
        }
        return p;
    }

    @Test
    void aPythonFileRunsThroughSparksPythonRunnerWithItsPyFilesAndArguments() {
        ClusterDriver.Plan plan = ClusterDriver.plan(props(ClusterDriver.PY_FILE, "pi.py",
                "spark.submit.pyFiles", "lib.zip"), new String[] {"20", "--out", "x"});
        assertEquals("org.apache.spark.deploy.PythonRunner", plan.mainClass());
        assertArrayEquals(new String[] {"pi.py", "lib.zip", "20", "--out", "x"}, plan.args());
    }

    @Test
    void aJvmMainClassGetsTheArgumentsAsTheyAre() {
        ClusterDriver.Plan plan = ClusterDriver.plan(props(ClusterDriver.MAIN_CLASS, "SumApp"), new String[] {"1"});
        assertEquals("SumApp", plan.mainClass());
        assertArrayEquals(new String[] {"1"}, plan.args());
    }

    @Test
    void neitherOrBothIsAnErrorNamingTheKeys() {
        for (Properties p : new Properties[] {props(), props(ClusterDriver.PY_FILE, "a.py", ClusterDriver.MAIN_CLASS, "M")}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> ClusterDriver.plan(p, new String[0]));
            assertTrue(e.getMessage().contains(ClusterDriver.PY_FILE) && e.getMessage().contains(ClusterDriver.MAIN_CLASS));
        }
    }
}
