package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.Map;
import org.apache.spark.scheduler.WorkerOffer;
import org.junit.jupiter.api.Test;
import scala.Option;
import scala.math.BigDecimal$;

/** The request of one offer round: which executors' free cores become slots the policy may grant. */
class OfferBatchTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static WorkerOffer offer(String executor, String host, int cores) {
        return new WorkerOffer(executor, host, BigDecimal$.MODULE$.apply(cores), Option.empty(),
                WorkerOffer.$lessinit$greater$default$5(), 0);
    }

    @Test
    void freeCoresBecomeWholeTaskSlotsAndExecutorsWithoutOneAreLeftOut() throws Exception {
        List<WorkerOffer> offers = List.of(offer("1", "h1", 5), offer("2", "h2", 1), offer("3", "h1", 2));
        OfferBatch batch = new OfferBatch("app-1", 7, 2, offers, null, List.of(), new ClusterMirror(), false);
        assertEquals(JSON.readTree("[{\"executor\": \"1\", \"host\": \"h1\", \"free\": 2},"
                + "{\"executor\": \"3\", \"host\": \"h1\", \"free\": 1}]"), batch.request.get("slots"));
        // Every offer stays addressable, so a grant naming any executor maps back to Spark's offer.
        assertEquals(Map.of("1", 0, "2", 1, "3", 2), batch.offerIndex);
    }

    @Test
    void theRequestIsAVersionedRound() throws Exception {
        OfferBatch batch = new OfferBatch("app-1", 7, 1, List.of(offer("1", "h1", 1)), null, List.of(), new ClusterMirror(), false);
        assertEquals(Protocol.VERSION, batch.request.get("v").asInt());
        assertEquals("round", batch.request.get("kind").asText());
        assertEquals("app-1", batch.request.get("app").asText());
        assertEquals(7, batch.request.get("round").asLong());
        assertEquals(1, batch.request.get("cpus_per_task").asInt());
        assertEquals(JSON.readTree("[]"), batch.request.get("stages"));
        assertEquals(Map.of(), batch.stages);
    }
}
