package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The version check at start: the Spark the plugin is built against passes, other lines do not. */
class SparkVersionTest {
    @Test
    void theSparkWeBuildAgainstIsSupported() {
        assertDoesNotThrow(() -> SparkVersion.check(org.apache.spark.package$.MODULE$.SPARK_VERSION()));
    }

    @Test
    void everyPatchOfASupportedLinePasses() {
        assertDoesNotThrow(() -> SparkVersion.check("4.3.7"));
        assertDoesNotThrow(() -> SparkVersion.check("4.3.1-SNAPSHOT"));
        assertEquals("4.3", SparkVersion.releaseLine("4.3"));
    }

    @Test
    void anotherLineIsOneErrorNamingTheSupportedOnes() {
        for (String other : new String[] {"3.5.1", "4.2.0", "4.30.0", "5.0.0-preview1", "garbage"}) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> SparkVersion.check(other));
            assertTrue(e.getMessage().contains("Spark " + other + " is not supported"), e.getMessage());
            assertTrue(e.getMessage().contains("4.3.x"), e.getMessage());
        }
    }
}
