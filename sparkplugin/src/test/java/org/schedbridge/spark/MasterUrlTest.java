package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** {@code spark-schedbridge://INNER}: which of Spark's backends INNER selects, and with what numbers. */
class MasterUrlTest {
    private static MasterUrl parse(String inner) {
        return MasterUrl.parse(MasterUrl.PREFIX + inner);
    }

    @Test
    void onlyTheSchedbridgeSchemeIsOurs() {
        assertTrue(MasterUrl.matches("spark-schedbridge://yarn"));
        assertFalse(MasterUrl.matches("yarn"));
        assertFalse(MasterUrl.matches("spark://host:7077"));
        assertFalse(MasterUrl.matches(null));
    }

    @Test
    void yarnAndStandaloneKeepTheInnerMaster() {
        MasterUrl yarn = parse("yarn");
        assertEquals(MasterUrl.Kind.YARN, yarn.kind);
        assertEquals("yarn", yarn.inner);
        MasterUrl standalone = parse("spark://a:7077,b:7077");
        assertEquals(MasterUrl.Kind.STANDALONE, standalone.kind);
        assertEquals("spark://a:7077,b:7077", standalone.inner);
    }

    @Test
    void localGivesThreadsAndMaxFailures() {
        assertArrayEquals(new int[] {1, 1}, parse("local").numbers);
        assertArrayEquals(new int[] {4, 1}, parse("local[4]").numbers);
        assertArrayEquals(new int[] {2, 3}, parse("local[2, 3]").numbers);
        assertArrayEquals(new int[] {Runtime.getRuntime().availableProcessors(), 1}, parse("local[*]").numbers);
        assertEquals(MasterUrl.Kind.LOCAL, parse("local[4]").kind);
    }

    @Test
    void localClusterGivesWorkersCoresAndMemory() {
        MasterUrl url = parse("local-cluster[2, 1, 1024]");
        assertEquals(MasterUrl.Kind.LOCAL_CLUSTER, url.kind);
        assertArrayEquals(new int[] {2, 1, 1024}, url.numbers);
    }

    @Test
    void anUnknownInnerMasterIsRefusedNamingIt() {
        for (String inner : new String[] {"k8s://https://host:6443", "local[x]", "local-cluster[2,1]", "yarn-client", ""}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> parse(inner));
            assertTrue(e.getMessage().contains("cannot wrap master '" + inner + "'"), e.getMessage());
        }
    }
}
