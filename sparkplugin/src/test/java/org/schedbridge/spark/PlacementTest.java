package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Decoding a policy's reply: grants per stage attempt and executor, in the policy's order; kills. */
class PlacementTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static Placement parse(String reply) throws Exception {
        return new Placement(JSON.readTree(reply));
    }

    @Test
    void grantsKeepThePolicysOrderAndMergeRepeatedExecutors() throws Exception {
        Placement p = parse("{\"v\": 2, \"round\": 7, \"assign\": ["
                + "{\"stage\": 3, \"attempt\": 1, \"executor\": \"2\", \"slots\": 2},"
                + "{\"stage\": 1, \"attempt\": 0, \"executor\": \"1\", \"slots\": 1},"
                + "{\"stage\": 3, \"attempt\": 1, \"executor\": \"1\", \"slots\": 1},"
                + "{\"stage\": 3, \"attempt\": 1, \"executor\": \"2\", \"slots\": 3}]}");
        assertEquals(List.of("3.1", "1.0"), List.copyOf(p.grants.keySet()));
        assertEquals(List.of(Map.entry("2", 5), Map.entry("1", 1)), List.copyOf(p.grants.get("3.1").entrySet()));
        assertEquals(Map.of("1", 1), p.grants.get("1.0"));
        assertTrue(p.preempt.isEmpty());
        assertFalse(p.sparkOrder);
    }

    @Test
    void containersTheNodeSideResizedAreReadInOrderAndAReplyWithoutThemHasNone() throws Exception {
        Placement p = parse("{\"v\": 2, \"round\": 3, \"assign\": [], \"preempt\": [], \"spark_order\": false, "
                + "\"containers\": [{\"executor\": \"2\", \"container\": \"c2\", \"action\": \"suspend\", \"ok\": true},"
                + "{\"executor\": \"1\", \"container\": \"c1\", \"action\": \"resume\", \"ok\": false}]}");
        assertEquals(List.of(new Placement.Container("2", "c2", true, true), new Placement.Container("1", "c1", false, false)),
                p.containers);
        assertTrue(parse("{\"assign\": []}").containers.isEmpty());
    }

    @Test
    void predictionsByExecutorAndLaunchesToWithdrawAreReadAndAReplyWithoutThemHasNone() throws Exception {
        Placement p = parse("{\"v\": 2, \"round\": 5, \"assign\": [], \"preempt\": [], \"spark_order\": false, "
                + "\"next\": [{\"executor\": \"1\", \"stage\": 4, \"attempt\": 1}, {\"executor\": \"2\", \"stage\": 6, "
                + "\"attempt\": 0}], \"withdraw\": [31, 30]}");
        assertEquals(Map.of("1", "4.1", "2", "6.0"), p.next);
        assertEquals(List.of(31L, 30L), p.withdraw);
        Placement none = parse("{\"assign\": []}");
        assertTrue(none.next.isEmpty() && none.withdraw.isEmpty());
    }

    @Test
    void aGrantWithoutSlotsIsOneSlotAndWithoutAttemptIsAttemptZero() throws Exception {
        Placement p = parse("{\"assign\": [{\"stage\": 4, \"executor\": \"9\"}]}");
        assertEquals(Map.of("4.0", Map.of("9", 1)), p.grants);
    }

    @Test
    void grantsOfNoSlotsAreDropped() throws Exception {
        Placement p = parse("{\"assign\": [{\"stage\": 1, \"executor\": \"1\", \"slots\": 0},"
                + "{\"stage\": 2, \"executor\": \"1\", \"slots\": -3}]}");
        assertTrue(p.grants.isEmpty(), p.grants.toString());
    }

    @Test
    void preemptionsAndSparkOrderAreRead() throws Exception {
        Placement p = parse("{\"assign\": [], \"preempt\": [12, 40000000000], \"spark_order\": true}");
        assertEquals(List.of(12L, 40_000_000_000L), p.preempt);
        assertTrue(p.sparkOrder);
    }

    @Test
    void aReplyWithoutFieldsHoldsEverythingBack() throws Exception {
        Placement p = parse("{\"v\": 2, \"round\": 1}");
        assertTrue(p.grants.isEmpty());
        assertTrue(p.preempt.isEmpty());
        assertFalse(p.sparkOrder);
    }
}
