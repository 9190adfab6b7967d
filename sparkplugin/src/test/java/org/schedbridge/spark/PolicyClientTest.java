package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.SparkConf;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The messages a policy host gets (attach, then rounds carrying the conf until one is answered)
 * and how its replies are read: any reply of another version, of another round, an error or a
 * malformed line makes the round fall back to Spark, with the reason counted.
 */
class PolicyClientTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String ATTACHED = "{\"v\": 2, \"attached\": true}";

    /** The fake in-process host: canned replies in order; the requests it got, as sent. */
    private final Deque<String> replies = new ArrayDeque<>();
    private final List<String> requests = new ArrayList<>();
    private final AtomicInteger reoffers = new AtomicInteger();
    private BridgeStats stats;
    private PolicyClient client;

    @BeforeEach
    void attachAFakeHost() {
        InProcessChannel.set(request -> {
            requests.add(request);
            return replies.removeFirst();
        });
        // a generous deadline: a loaded machine (a CI run beside) can hold a 50 ms call past it
        connect(new SparkConf(false).set(BridgeConf.PREFIX + "deadline", "10s"));
    }

    /** A client of the in-process host, with the plugin's keys of {@code conf}. */
    private void connect(SparkConf conf) {
        BridgeConf bridge = BridgeConf.from(conf.set(BridgeConf.PREFIX + "endpoint", BridgeConf.INPROCESS));
        stats = BridgeStats.reset(bridge.policy, bridge.endpoint);
        client = new PolicyClient("app", PolicyEndpoint.open(bridge, "app"), new ClusterMirror(), bridge, stats);
    }

    @AfterEach
    void detach() {
        client.close();
        InProcessChannel.set(null);
    }

    private PolicyClient.Answer round(long n, String... replyLines) {
        return call(n, true, replyLines);
    }

    private PolicyClient.Answer call(long n, boolean places, String... replyLines) {
        replies.addAll(List.of(replyLines));
        ObjectNode request = JSON.createObjectNode().put("v", Protocol.VERSION).put("kind", "round").put("round", n);
        return client.round(request, places ? reoffers::incrementAndGet : null);
    }

    /** The client again, with this deadline and late limit; the host holds round {@code held} until {@code go} opens. */
    private void heldHost(String deadline, String lateLimit, long held, CountDownLatch go) {
        client.close();
        InProcessChannel.set(request -> {
            requests.add(request);
            if (request.contains("\"round\":" + held)) {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return replies.removeFirst();
        });
        connect(new SparkConf(false).set(BridgeConf.PREFIX + "deadline", deadline)
                .set(BridgeConf.PREFIX + "late.limit", lateLimit));
    }

    private long counter(String name) {
        return stats.counters().get(name).asLong();
    }

    private JsonNode sent(int i) throws Exception {
        return JSON.readTree(requests.get(i));
    }

    private String lastFailure() {
        return stats.counters().get("last_failure").asText();
    }

    @Test
    void attachFirstThenTheConfRidesUntilARoundIsAnswered() throws Exception {
        assertTrue(round(1, ATTACHED, "{\"v\": 2, \"round\": 1, \"assign\": []}").answered());
        assertTrue(round(2, "{\"v\": 2, \"round\": 2}").answered());
        JsonNode attach = sent(0);
        assertEquals("attach", attach.get("kind").asText());
        assertEquals(Protocol.VERSION, attach.get("v").asInt());
        assertEquals("fifo", attach.get("policy").asText());
        assertEquals(JSON.createObjectNode(), attach.get("params"));
        assertEquals("round", sent(1).get("kind").asText());
        assertEquals("fifo", sent(1).get("conf").get("policy").asText(), "the first round is a snapshot");
        assertFalse(sent(2).has("conf"), "an answered round's successor carries only events");
        assertEquals(2, stats.counters().get("policy_rounds").asInt());
    }

    @Test
    void anAnswersTimeIsSplitByTheHostsOwnPart() throws Exception {
        InProcessChannel.set(request -> {
            requests.add(request);
            try {
                Thread.sleep(30);  // the trip: 30 ms, of which the host says 20 were its own
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return replies.removeFirst();
        });
        assertTrue(round(1, ATTACHED, "{\"v\": 2, \"round\": 1, \"host_us\": 20000}").answered());
        assertTrue(round(2, "{\"v\": 2, \"round\": 2}").answered());  // a host that does not say
        JsonNode parts = JSON.readTree(BridgeStats.json());
        assertEquals(2, parts.get("serialise_us").size());
        assertEquals(2, parts.get("parse_us").size());
        assertEquals(List.of(20000L), longs(parts.get("host_us")));
        assertEquals(1, parts.get("trip_us").size());
        long trip = parts.get("trip_us").get(0).asLong();
        assertTrue(trip >= 9000 && trip < parts.get("call_us").get(0).asLong() - 20000 + 1, "trip " + trip);
    }

    private static List<Long> longs(JsonNode array) {
        List<Long> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asLong()));
        return out;
    }

    /** Sends round {@code n} without waiting (a round that launched ahead). */
    private PolicyClient.Answer send(long n, String... replyLines) {
        replies.addAll(List.of(replyLines));
        ObjectNode request = JSON.createObjectNode().put("v", Protocol.VERSION).put("kind", "round").put("round", n);
        return client.send(request, reoffers::incrementAndGet);
    }

    /** Waits (at most 10 s) until the reply to a sent round has landed: its re-offer has run. */
    private void awaitReoffers(int n) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (reoffers.get() < n && System.nanoTime() < end) {
            Thread.sleep(1);
        }
        assertEquals(n, reoffers.get(), "the landed reply re-offers once");
    }

    @Test
    void aSentRoundIsAnsweredThroughTheNextRoundsCollect() throws Exception {
        assertTrue(round(1, ATTACHED, "{\"v\": 2, \"round\": 1}").answered());
        assertEquals(PolicyClient.Answer.SENT, send(2, "{\"v\": 2, \"round\": 2, \"next\": []}"));
        awaitReoffers(1);
        assertFalse(client.awaiting());
        PolicyClient.Answer answer = client.collect();
        assertTrue(answer.answered());
        assertEquals(2, answer.reply().get("round").asInt());
        assertEquals(null, client.collect(), "an answer is collected once");
        assertFalse(sent(2).has("conf"), "a sent round carries only events, as a waited-for one");
        assertEquals(2, counter("policy_rounds"));
        assertEquals(0, counter("late_rounds"));
    }

    @Test
    void aSentRoundOutIsAwaitedNotLate() throws Exception {
        CountDownLatch go = new CountDownLatch(1);
        heldHost("10s", "20s", 2, go);
        assertTrue(round(1, ATTACHED, "{\"v\": 2, \"round\": 1}").answered());
        assertEquals(PolicyClient.Answer.SENT, send(2, "{\"v\": 2, \"round\": 2}"));
        assertTrue(client.awaiting());
        assertEquals(null, client.collect(), "nothing to collect while the call is out");
        go.countDown();
        awaitReoffers(1);
        assertTrue(client.collect().answered());
        assertEquals(0, counter("late_rounds"));
        assertEquals(0, counter("fallback_rounds"));
    }

    @Test
    void aSentRoundsBadReplyFallsBackWhenCollected() throws Exception {
        assertTrue(round(1, ATTACHED, "{\"v\": 2, \"round\": 1}").answered());
        send(2, "{\"v\": 2, \"round\": 7}");
        awaitReoffers(1);
        assertTrue(client.collect().failed());
        assertEquals("reply names round 7 in answer to round 2", lastFailure());
        assertEquals(1, counter("fallback_rounds"));
        assertTrue(round(3, "{\"v\": 2, \"round\": 3}").answered());
        assertTrue(sent(3).has("conf"), "after a failed sent round the host gets the whole state");
    }

    @Test
    void aReplyOfAnotherProtocolVersionFallsBack() {
        assertTrue(round(1, ATTACHED, "{\"v\": 1, \"round\": 1, \"assign\": []}").failed());
        assertEquals("policy host speaks protocol v1, plugin v" + Protocol.VERSION, lastFailure());
    }

    @Test
    void aReplyNamingAnotherRoundFallsBack() {
        assertTrue(round(3, ATTACHED, "{\"v\": 2, \"round\": 2, \"assign\": []}").failed());
        assertEquals("reply names round 2 in answer to round 3", lastFailure());
    }

    @Test
    void aPolicyErrorFallsBackNamingIt() {
        assertTrue(round(1, ATTACHED, "{\"v\": 2, \"error\": \"KeyError: 'x'\"}").failed());
        assertEquals("policy error: KeyError: 'x'", lastFailure());
    }

    @Test
    void aMalformedReplyFallsBack() {
        assertTrue(round(1, ATTACHED, "{\"v\": 2, \"round\": ").failed());
        assertTrue(lastFailure().startsWith("malformed policy reply"), lastFailure());
    }

    @Test
    void aRefusedAttachFallsBackWithTheHostsReason() {
        assertTrue(round(1, "{\"v\": 2, \"refused\": \"unknown policy 'fifoo'\"}").failed());
        assertEquals("policy host refused this application: unknown policy 'fifoo'", lastFailure());
        assertEquals(1, requests.size(), "no round is sent to a host that refused the attach");
    }

    @Test
    void aFailedRoundMakesTheNextOneASnapshotAgain() throws Exception {
        assertTrue(round(1, ATTACHED, "{\"v\": 2, \"round\": 1}").answered());
        assertTrue(round(2, "{\"v\": 2, \"error\": \"boom\"}").failed());
        assertTrue(round(3, "{\"v\": 2, \"round\": 3}").answered());
        assertFalse(sent(2).has("conf"));
        assertTrue(sent(3).has("conf"), "after a failed round the host gets the whole state");
        assertEquals(1, stats.counters().get("fallback_rounds").asInt());
    }

    @Test
    void aFailedReportIsCountedApartFromFallbackRounds() throws Exception {
        assertTrue(round(1, ATTACHED, "{\"v\": 2, \"round\": 1}").answered());
        assertTrue(call(2, false, "{\"v\": 2, \"error\": \"boom\"}").failed());
        assertEquals(0, stats.counters().get("fallback_rounds").asInt(), "a report has no slot to fall back");
        assertEquals(1, stats.counters().get("failed_reports").asInt());
        assertEquals("policy error: boom", lastFailure());
        assertTrue(round(3, "{\"v\": 2, \"round\": 3}").answered());
        assertTrue(sent(3).has("conf"), "the failed report's events go out again in a snapshot");
        assertTrue(stats.degraded());
    }

    @Test
    void aLateAnswerHoldsTheRoundAndReoffersWhenItLands() throws Exception {
        CountDownLatch go = new CountDownLatch(1);
        heldHost("1s", "10min", 2, go);
        assertTrue(round(1, ATTACHED, "{\"v\": 2, \"round\": 1}").answered());
        assertTrue(round(2, "{\"v\": 2, \"round\": 2}").late(), "past its deadline the round waits");
        assertTrue(round(3).late(), "so does the next while the call still runs");
        assertEquals(0, reoffers.get());
        go.countDown();
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (reoffers.get() == 0 && System.nanoTime() < end) {
            Thread.sleep(5);
        }
        assertEquals(1, reoffers.get(), "the late answer asks Spark for a new round, once");
        assertTrue(round(4, "{\"v\": 2, \"round\": 4}").answered());
        assertFalse(sent(3).has("conf"), "the late call was answered: the host's state is current");
        assertEquals(2, counter("late_rounds"));
        assertEquals(0, counter("fallback_rounds"));
        assertEquals(1, counter("warnings"));
        assertEquals("", lastFailure(), "waiting for an answer is not a failure");
    }

    @Test
    void aLateFirstRoundsSnapshotIsNotSentAgainOnceItIsAnswered() throws Exception {
        CountDownLatch go = new CountDownLatch(1);
        heldHost("100ms", "10min", 1, go);
        assertTrue(round(1, ATTACHED, "{\"v\": 2, \"round\": 1}").late(), "the host rebuilds its state slowly");
        go.countDown();
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (reoffers.get() == 0 && System.nanoTime() < end) {
            Thread.sleep(5);
        }
        assertTrue(round(2, "{\"v\": 2, \"round\": 2}").answered());
        assertTrue(sent(1).has("conf"), "the first round is a snapshot");
        // else every round rebuilds the host's state, and each is late again: no task ever starts
        assertFalse(sent(2).has("conf"), "the late snapshot was answered: the host holds this connection's state");
    }

    @Test
    void aLateReportWaitsWithoutAReofferAndIsNotAFailure() throws Exception {
        CountDownLatch go = new CountDownLatch(1);
        heldHost("100ms", "10min", 2, go);
        assertTrue(round(1, ATTACHED, "{\"v\": 2, \"round\": 1}").answered());
        assertTrue(call(2, false, "{\"v\": 2, \"round\": 2}").late());
        go.countDown();
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!replies.isEmpty() && System.nanoTime() < end) {  // the held call took its reply
            Thread.sleep(5);
        }
        Thread.sleep(200);  // and returned it
        assertTrue(round(3, "{\"v\": 2, \"round\": 3}").answered());
        assertEquals(0, reoffers.get(), "a report has no slot to offer again");
        assertEquals(1, counter("late_rounds"));
        assertEquals(0, counter("failed_reports"));
        assertFalse(sent(3).has("conf"), "the late report was answered: its events reached the host");
    }

    @Test
    void aCallOutForLongerThanTheLimitFallsBack() throws Exception {
        CountDownLatch go = new CountDownLatch(1);
        heldHost("100ms", "1s", 2, go);
        assertTrue(round(1, ATTACHED, "{\"v\": 2, \"round\": 1}").answered());
        assertTrue(round(2, "{\"v\": 2, \"round\": 2}").late());
        Thread.sleep(1100);
        assertTrue(round(3).failed(), "a call out for over the limit: the round is Spark's");
        assertEquals(1, counter("late_rounds"));
        assertEquals(1, counter("fallback_rounds"));
        assertTrue(lastFailure().endsWith("out for over 1000 ms"), lastFailure());
        go.countDown();
    }
}
