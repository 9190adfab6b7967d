package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Properties;
import org.junit.jupiter.api.Test;

class BridgeListenerTest {
    @Test
    void aJobsPoolIdentityAndOwnPropertiesAreForwardedNothingElse() {
        Properties props = new Properties();
        props.setProperty("spark.scheduler.pool", "etl");
        props.setProperty("spark.jobGroup.id", "daily-report");
        props.setProperty("spark.job.tags", "b,a");
        props.setProperty("spark.job.description", "nightly");
        props.setProperty("callSite.short", "collect at report.py:12");
        props.setProperty("schedbridge.job", "report");
        props.setProperty("spark.rdd.scope", "{\"id\":\"1\"}");
        props.setProperty("callSite.long", "a long stack");
        ObjectNode out = BridgeListener.properties(props);
        List<String> keys = new java.util.ArrayList<>();
        out.fieldNames().forEachRemaining(keys::add);
        assertEquals(List.of("callSite.short", "schedbridge.job", "spark.job.description", "spark.job.tags",
                "spark.jobGroup.id", "spark.scheduler.pool"), keys);
        assertEquals("daily-report", out.get("spark.jobGroup.id").asText());
    }

    @Test
    void noPropertiesForwardNothing() {
        assertEquals(0, BridgeListener.properties(null).size());
    }
}
