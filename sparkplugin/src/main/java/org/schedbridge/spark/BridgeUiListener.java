package org.schedbridge.spark;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.status.ElementTrackingStore;
import scala.runtime.BoxedUnit;

/**
 * Folds the plugin's events ({@link PlacementEvent}, {@link BridgeEvents}) into the application's
 * {@link BridgeUiSummary}, in its status store: live in the driver (written at most every
 * {@link #LIVE_WRITE_MS} for placements, at once for anything else), or replayed from the event log
 * by the History Server (written when the replay flushes its store).
 */
final class BridgeUiListener extends SparkListener {
    static final long LIVE_WRITE_MS = 200;
    /** Spark's name of a task attempt: {@code task 3.0 in stage 1.0 (TID 7)} (TaskSetManager). */
    private static final Pattern STAGE = Pattern.compile(" in stage (\\d+)\\.(\\d+) ");
    private static final String[] BY = {"POLICY", "FALLBACK", "UNMANAGED"};

    private final ElementTrackingStore store;
    private final boolean live;
    private long writtenMs;
    private BridgeEvents.PolicyStart start = new BridgeEvents.PolicyStart(0, "", Map.of(), "");
    private boolean seen;
    private Map<String, Long> counters = Map.of();
    /** "stage attempt" (numerically ordered) -> tasks by {@link #BY}. */
    private final Map<List<Integer>, long[]> stages = new TreeMap<>(BridgeUiListener::compareStages);
    private final Map<String, long[]> fallbacks = new LinkedHashMap<>();
    private final ArrayDeque<BridgeEvents.Preemption> preemptions = new ArrayDeque<>();
    private long preemptionsDone;
    private long preemptionsRefused;
    private final ArrayDeque<BridgeEvents.ContainerChange> containers = new ArrayDeque<>();
    private final ContainerCounts resizes = new ContainerCounts();

    BridgeUiListener(ElementTrackingStore store, boolean live) {
        this.store = store;
        this.live = live;
        store.onFlush(() -> {
            write();
            return BoxedUnit.UNIT;
        });
    }

    private static int compareStages(List<Integer> a, List<Integer> b) {
        int c = Integer.compare(a.get(0), b.get(0));
        return c != 0 ? c : Integer.compare(a.get(1), b.get(1));
    }

    @Override
    public synchronized void onOtherEvent(SparkListenerEvent event) {
        if (event instanceof PlacementEvent p) {
            placed(p);
        } else if (event instanceof BridgeEvents.PolicyStart s) {
            start = s;
        } else if (event instanceof BridgeEvents.Fallback f) {
            long[] agg = fallbacks.computeIfAbsent(f.reason(), r -> new long[] {0, f.time(), f.time()});
            agg[0]++;
            agg[2] = f.time();
        } else if (event instanceof BridgeEvents.Preemption p) {
            preempted(p);
        } else if (event instanceof BridgeEvents.ContainerChange c) {
            resized(c);
        } else if (event instanceof BridgeEvents.Counters c) {
            counters = c.counters();
        } else {
            return;
        }
        seen = true;
        if (live && (!(event instanceof PlacementEvent) || System.currentTimeMillis() - writtenMs >= LIVE_WRITE_MS)) {
            write();
        }
    }

    private void placed(PlacementEvent p) {
        Matcher m = STAGE.matcher(p.task());
        List<Integer> key = m.find() ? List.of(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)))
                : List.of(-1, -1);  // not Spark's name format: counted under stage "?"
        long[] by = stages.computeIfAbsent(key, k -> new long[BY.length]);
        for (int i = 0; i < BY.length; i++) {
            if (BY[i].equals(p.by())) {
                by[i]++;
            }
        }
    }

    private void preempted(BridgeEvents.Preemption p) {
        if (p.done()) {
            preemptionsDone++;
        } else {
            preemptionsRefused++;
        }
        recent(preemptions, p);
    }

    private void resized(BridgeEvents.ContainerChange c) {
        resizes.count(c.suspend(), c.ok());
        recent(containers, c);
    }

    /** {@code event} kept among the last {@link BridgeUiSummary#RECENT} of {@code kept}. */
    private static <E> void recent(ArrayDeque<E> kept, E event) {
        kept.addLast(event);
        if (kept.size() > BridgeUiSummary.RECENT) {
            kept.removeFirst();
        }
    }

    @Override
    public synchronized void onApplicationEnd(SparkListenerApplicationEnd event) {
        write();
    }

    /** The summary so far (nothing before the plugin's first event: other applications get no tab). */
    synchronized void write() {
        if (seen) {
            store.write(summary());
            writtenMs = System.currentTimeMillis();
        }
    }

    synchronized BridgeUiSummary summary() {
        List<BridgeUiSummary.StagePlacements> perStage = new ArrayList<>();
        stages.forEach((k, n) -> perStage.add(new BridgeUiSummary.StagePlacements(k.get(0), k.get(1), n[0], n[1], n[2])));
        List<BridgeUiSummary.FallbackReason> reasons = new ArrayList<>();
        fallbacks.forEach((r, a) -> reasons.add(new BridgeUiSummary.FallbackReason(r, a[0], a[1], a[2])));
        return new BridgeUiSummary(start.policy(), sorted(start.params()), start.endpoint(), sorted(counters),
                List.copyOf(perStage), List.copyOf(reasons), List.copyOf(preemptions), preemptionsDone,
                preemptionsRefused, List.copyOf(containers), resizes.suspends(), resizes.resumes(), resizes.failed());
    }

    private static <V> Map<String, V> sorted(Map<String, V> map) {
        return Collections.unmodifiableMap(new TreeMap<>(map));
    }
}
