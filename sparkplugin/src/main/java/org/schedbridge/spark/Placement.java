package org.schedbridge.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A policy's reply for one round: grants ("stage S attempt A may use N slots of executor E"),
 * grouped by stage in the policy's order, and task ids to preempt. Stages and slots not granted
 * are held back this round. {@code sparkOrder}: the policy declared that, while the runnable
 * stages and the executors stay the same, Spark's own order is its answer. {@code containers}:
 * the application's executors' containers its node agents suspended or resumed since the last
 * reply (a preempting policy's node side), for the event log. {@code next} and {@code withdraw}:
 * launches ahead of the answer ({@code spark.schedbridge.launch.ahead}), see {@link PlacementRounds}.
 */
final class Placement {
    /** stage key -> executor id -> slots, both in the order the policy listed them. */
    final Map<String, Map<String, Integer>> grants = new LinkedHashMap<>();
    final List<Long> preempt = new ArrayList<>();
    final boolean sparkOrder;
    final List<Container> containers = new ArrayList<>();
    /** Executor id -> the stage key a freed slot of it may take before the next reply (a launch ahead). */
    final Map<String, String> next = new HashMap<>();
    /** Launches ahead the policy did not choose: task ids to withdraw. */
    final List<Long> withdraw = new ArrayList<>();

    /** A suspend or resume sent to the agent of {@code executor}'s container; {@code ok}: applied. */
    record Container(String executor, String container, boolean suspend, boolean ok) {
    }

    Placement(JsonNode reply) {
        for (JsonNode g : reply.path("assign")) {
            String stage = OfferBatch.key(g.path("stage").asInt(-1), g.path("attempt").asInt(0));
            int slots = g.path("slots").asInt(1);
            if (slots > 0) {
                grants.computeIfAbsent(stage, k -> new LinkedHashMap<>())
                        .merge(g.path("executor").asText(), slots, Integer::sum);
            }
        }
        for (JsonNode t : reply.path("preempt")) {
            preempt.add(t.asLong());
        }
        sparkOrder = reply.path("spark_order").asBoolean(false);
        for (JsonNode n : reply.path("next")) {
            next.put(n.path("executor").asText(), OfferBatch.key(n.path("stage").asInt(-1), n.path("attempt").asInt(0)));
        }
        for (JsonNode t : reply.path("withdraw")) {
            withdraw.add(t.asLong());
        }
        for (JsonNode c : reply.path("containers")) {
            containers.add(new Container(c.path("executor").asText(), c.path("container").asText(),
                    "suspend".equals(c.path("action").asText()), c.path("ok").asBoolean(false)));
        }
    }
}
