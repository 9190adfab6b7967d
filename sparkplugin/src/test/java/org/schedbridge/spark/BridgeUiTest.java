package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.ReplayListenerBus;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.status.ElementTrackingStore;
import org.apache.spark.util.JsonProtocol;
import org.apache.spark.util.kvstore.InMemoryStore;
import org.junit.jupiter.api.Test;
import scala.jdk.javaapi.CollectionConverters;

class BridgeUiTest {
    private static final long T = 1_700_000_000_000L;

    /** Events as a run under the plugin posts them: start, placements of three stages, two fall-back reasons, kills, resized containers. */
    private static List<SparkListenerEvent> run() {
        List<SparkListenerEvent> events = new ArrayList<>();
        events.add(new BridgeEvents.PolicyStart(T, "hawk", Map.of("short_cutoff_s", "2.5", "note", "<b>&"), "in-process"));
        for (int i = 0; i < 3; i++) {
            events.add(new PlacementEvent("hawk", 1 + i, "POLICY", i, "task " + i + ".0 in stage 1.0 (TID " + i + ")", "driver"));
        }
        events.add(new PlacementEvent("hawk", 4, "FALLBACK", 3, "task 0.0 in stage 10.1 (TID 3)", "driver"));
        events.add(new PlacementEvent("hawk", 4, "UNMANAGED", 4, "task 1.0 in stage 2.0 (TID 4)", "driver"));
        events.add(new BridgeEvents.Fallback(T + 10, "policy call exceeded its 50 ms deadline"));
        events.add(new BridgeEvents.Fallback(T + 20, "policy host unreachable: refused"));
        events.add(new BridgeEvents.Fallback(T + 30, "policy call exceeded its 50 ms deadline"));
        events.add(new BridgeEvents.Preemption(T + 40, 2, "1.2", true));
        events.add(new BridgeEvents.Preemption(T + 41, 1, "1.1", false));
        events.add(new BridgeEvents.ContainerChange(T + 42, "1", "container_1_01_000002", true, true));
        events.add(new BridgeEvents.ContainerChange(T + 43, "2", "container_1_01_000003", true, true));
        events.add(new BridgeEvents.ContainerChange(T + 44, "1", "container_1_01_000002", false, true));
        events.add(new BridgeEvents.ContainerChange(T + 45, "2", "container_1_01_000003", false, false));
        events.add(new BridgeEvents.Counters(T + 50, Map.of("policy_rounds", 4L, "fallback_rounds", 2L, "kills", 1L)));
        return events;
    }

    private static ElementTrackingStore store() {
        return new ElementTrackingStore(new InMemoryStore(), new SparkConf(false));
    }

    @Test
    void theSummaryCountsPlacementsPerStageFallbacksPerReasonAndPreemptions() {
        BridgeUiListener listener = new BridgeUiListener(store(), false);
        run().forEach(listener::onOtherEvent);
        BridgeUiSummary s = listener.summary();
        assertEquals("hawk", s.policy());
        assertEquals(List.of("note", "short_cutoff_s"), List.copyOf(s.params().keySet()));
        assertEquals(List.of(new BridgeUiSummary.StagePlacements(1, 0, 3, 0, 0),
                new BridgeUiSummary.StagePlacements(2, 0, 0, 0, 1),
                new BridgeUiSummary.StagePlacements(10, 1, 0, 1, 0)), s.stages());  // numeric order, not 1, 10, 2
        assertEquals(List.of(new BridgeUiSummary.FallbackReason("policy call exceeded its 50 ms deadline", 2, T + 10, T + 30),
                new BridgeUiSummary.FallbackReason("policy host unreachable: refused", 1, T + 20, T + 20)), s.fallbacks());
        assertEquals(1, s.preemptionsDone());
        assertEquals(1, s.preemptionsRefused());
        assertEquals(4L, s.counters().get("policy_rounds"));
        assertEquals(2, s.suspends());
        assertEquals(1, s.resumes());
        assertEquals(1, s.failedContainerCommands());
        assertEquals(4, s.containers().size());
    }

    @Test
    void theContainersAHostReportsAreCountedAndPostedOneEventEach() {
        BridgeStats stats = BridgeStats.reset("kairos", "test");
        List<SparkListenerEvent> posted = new ArrayList<>();
        stats.journal(posted::add);
        stats.containers(List.of(new Placement.Container("1", "c1", true, true),
                new Placement.Container("1", "c1", false, true), new Placement.Container("2", "c2", true, false)));
        Map<String, Long> n = stats.numbers();
        assertEquals(List.of(1L, 1L, 1L), List.of(n.get("suspends"), n.get("resumes"), n.get("failed_container_commands")));
        assertEquals(3, posted.size());
        BridgeEvents.ContainerChange last = (BridgeEvents.ContainerChange) posted.get(2);
        assertEquals(List.of("2", "c2", true, false), List.of(last.executor(), last.container(), last.suspend(), last.ok()));
    }

    @Test
    void onlyTheMostRecentPreemptionsAreKeptTheTotalsCountAll() {
        BridgeUiListener listener = new BridgeUiListener(store(), false);
        for (int i = 0; i < BridgeUiSummary.RECENT + 5; i++) {
            listener.onOtherEvent(new BridgeEvents.Preemption(T + i, i, "0." + i, true));
        }
        BridgeUiSummary s = listener.summary();
        assertEquals(BridgeUiSummary.RECENT, s.preemptions().size());
        assertEquals(5, s.preemptions().get(0).taskId());
        assertEquals(BridgeUiSummary.RECENT + 5, s.preemptionsDone());
    }

    @Test
    void aLiveListenerWritesAtOnceAReplayOnlyWhenTheStoreFlushes() throws Exception {
        ElementTrackingStore live = store();
        new BridgeUiListener(live, true).onOtherEvent(run().get(0));
        assertEquals("hawk", live.read(BridgeUiSummary.class, BridgeUiSummary.KEY).policy());

        ElementTrackingStore replayed = store();
        BridgeUiListener listener = new BridgeUiListener(replayed, false);
        run().forEach(listener::onOtherEvent);
        assertThrows(NoSuchElementException.class, () -> replayed.read(BridgeUiSummary.class, BridgeUiSummary.KEY));
        replayed.close(false);  // what the History Server does when the replay ends
        assertEquals(3, replayed.read(BridgeUiSummary.class, BridgeUiSummary.KEY).stages().size());
    }

    @Test
    void anApplicationWithoutThePluginsEventsGetsNoSummary() throws Exception {
        ElementTrackingStore store = store();
        BridgeUiListener listener = new BridgeUiListener(store, true);
        listener.onOtherEvent(new SparkListenerEvent() { });
        listener.onApplicationEnd(new SparkListenerApplicationEnd(T, scala.Option.empty()));
        store.close(false);
        assertEquals(0, store.count(BridgeUiSummary.class));
    }

    /** The History Server's path: the event log's JSON lines, replayed into the plugin's listeners. */
    @Test
    void theHistoryPluginRebuildsTheSummaryFromAnEventLog() throws Exception {
        StringBuilder log = new StringBuilder();
        for (SparkListenerEvent e : run()) {
            log.append(JsonProtocol.sparkEventToJsonString(e)).append('\n');
        }
        ElementTrackingStore store = store();
        ReplayListenerBus bus = new ReplayListenerBus();
        for (SparkListener l : CollectionConverters.asJava(new BridgeHistoryPlugin().createListeners(new SparkConf(false), store))) {
            bus.addListener(l);
        }
        assertTrue(bus.replay(new ByteArrayInputStream(log.toString().getBytes(StandardCharsets.UTF_8)), "events", false,
                bus.replay$default$4()));
        store.close(false);
        BridgeUiSummary s = store.read(BridgeUiSummary.class, BridgeUiSummary.KEY);
        assertEquals(new BridgeUiSummary.StagePlacements(1, 0, 3, 0, 0), s.stages().get(0));
        assertEquals(2, s.fallbacks().size());
        assertEquals("1.2", s.preemptions().get(0).task());
        assertEquals(2L, s.counters().get("fallback_rounds"));
        assertEquals(new BridgeEvents.ContainerChange(T + 45, "2", "container_1_01_000003", false, false),
                s.containers().get(3));
    }

    @Test
    void thePageNamesThePolicyItsParametersEscapedAndEachSection() {
        BridgeUiListener listener = new BridgeUiListener(store(), false);
        run().forEach(listener::onOtherEvent);
        String html = BridgeUiPage.body(listener.summary());
        assertTrue(html.contains("<strong id=\"schedbridge-policy\">hawk</strong>"), html);
        assertTrue(html.contains("<td>note</td><td>&lt;b&gt;&amp;</td>"), html);
        assertFalse(html.contains("<b>&"), html);
        assertTrue(html.contains("<td>policy_rounds</td><td>4</td>"), html);
        assertTrue(html.contains("<td>10</td><td>1</td><td>0</td><td>1</td><td>0</td>"), html);
        assertTrue(html.contains("<td>policy call exceeded its 50 ms deadline</td><td>2</td>"), html);
        assertTrue(html.contains("1 task attempt(s) preempted, 1 refused"), html);
        assertTrue(html.contains("<td>1.1</td><td>refused</td>"), html);
        assertTrue(html.contains("2 container(s) suspended, 1 resumed, 1 command(s) not applied"), html);
        assertTrue(html.contains("<td>2</td><td>container_1_01_000003</td><td>resume</td><td>failed</td>"), html);
    }

    @Test
    void anEmptySummarySaysWhatIsMissing() {
        String html = BridgeUiPage.body(new BridgeUiListener(store(), false).summary());
        assertTrue(html.contains("No parameters"), html);
        assertTrue(html.contains("No task launched yet"), html);
        assertTrue(html.contains("No round fell back"), html);
    }
}
