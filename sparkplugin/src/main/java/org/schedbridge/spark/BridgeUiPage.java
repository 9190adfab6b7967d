package org.schedbridge.spark;

import jakarta.servlet.http.HttpServletRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import org.apache.spark.ui.UIUtils;
import org.apache.spark.ui.WebUIPage;
import org.apache.spark.util.kvstore.KVStore;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.xml.Node;
import scala.xml.Unparsed;
import scala.xml.Utility;

/**
 * The {@code schedbridge} tab's page: the policy and its parameters, its rounds, the tasks it
 * placed per stage, the rounds that fell back to Spark and why, the preemptions it asked for, and
 * the containers its node side suspended and resumed.
 * The HTML is built as text (every value escaped) and handed to Spark's page frame whole, so the
 * page needs no Scala XML literals.
 */
final class BridgeUiPage extends WebUIPage {
    /** The counters shown under "Rounds and tasks", in this order, with what each counts. */
    static final Map<String, String> COUNTERS = orderedCounters();

    private final BridgeUiTab tab;
    private final KVStore store;

    BridgeUiPage(BridgeUiTab tab, KVStore store) {
        super("");
        this.tab = tab;
        this.store = store;
    }

    private static Map<String, String> orderedCounters() {
        Map<String, String> m = new java.util.LinkedHashMap<>();
        m.put("policy_rounds", "offer rounds the policy answered");
        m.put("fallback_rounds", "rounds left to Spark's own scheduling after a failure (watchdog included)");
        m.put("late_rounds", "rounds that launched nothing while a late policy answer was awaited");
        m.put("watchdog_rounds", "rounds given to Spark because free slots were held back too long");
        m.put("stall_revivals", "rounds revived after none came while a slot was free and tasks waited (local mode)");
        m.put("held_rounds", "rounds in which the policy held free slots back while tasks waited");
        m.put("spark_order_rounds", "rounds in Spark's order, as the policy declared, without asking");
        m.put("failed_reports", "reports without a slot to grant that failed");
        m.put("warnings", "warnings logged");
        m.put("placed_tasks", "tasks launched by the policy's grants");
        m.put("fallback_tasks", "tasks launched in fall-back rounds");
        m.put("unmanaged_tasks", "tasks of barrier or custom-resource stages, left to Spark");
        m.put("kills", "task attempts preempted at the policy's request");
        m.put("kills_refused", "preemptions refused by the plugin's bounds");
        m.put("suspends", "executors' containers suspended by the policy's node agents");
        m.put("resumes", "executors' containers resumed by the policy's node agents");
        m.put("failed_container_commands", "suspends and resumes the node agents did not apply");
        return java.util.Collections.unmodifiableMap(m);
    }

    @Override
    public Seq<Node> render(HttpServletRequest request) {
        String html;
        try {
            html = body(store.read(BridgeUiSummary.class, BridgeUiSummary.KEY));
        } catch (NoSuchElementException e) {
            html = "<p>No schedbridge events yet.</p>";
        } catch (Exception e) {
            html = "<p>schedbridge: cannot read this application's summary: " + esc(e.toString()) + "</p>";
        }
        Seq<Node> content = CollectionConverters.asScala(List.<Node>of(new Unparsed(html))).toSeq();
        return UIUtils.headerSparkPage(request, "schedbridge", () -> content, tab,
                UIUtils.headerSparkPage$default$5(), UIUtils.headerSparkPage$default$6(),
                UIUtils.headerSparkPage$default$7(), UIUtils.headerSparkPage$default$8());
    }

    /** The page's content for {@code s}, as HTML. */
    static String body(BridgeUiSummary s) {
        StringBuilder b = new StringBuilder();
        b.append("<h4>Policy</h4><p>Policy <strong id=\"schedbridge-policy\">").append(esc(s.policy()))
                .append("</strong>, hosted by ").append(esc(s.endpoint())).append(".</p>");
        List<List<String>> params = new ArrayList<>();
        s.params().forEach((k, v) -> params.add(List.of(k, v)));
        b.append(params.isEmpty() ? "<p>No parameters: the policy's defaults.</p>"
                : table(List.of("Parameter", "Value"), params));

        b.append("<h4>Rounds and tasks</h4>");
        List<List<String>> counters = new ArrayList<>();
        COUNTERS.forEach((k, what) -> {
            if (s.counters().containsKey(k)) {
                counters.add(List.of(k, String.valueOf(s.counters().get(k)), what));
            }
        });
        b.append(counters.isEmpty() ? "<p>No counters posted yet (they are, at most once a second).</p>"
                : table(List.of("Counter", "Value", "Counts"), counters));

        b.append("<h4>Placements per stage</h4>");
        List<List<String>> stages = new ArrayList<>();
        for (BridgeUiSummary.StagePlacements p : s.stages()) {
            stages.add(List.of(p.stage() < 0 ? "?" : String.valueOf(p.stage()), p.stage() < 0 ? "?" : String.valueOf(p.attempt()),
                    String.valueOf(p.policy()), String.valueOf(p.fallback()), String.valueOf(p.unmanaged())));
        }
        b.append(stages.isEmpty() ? "<p>No task launched yet.</p>"
                : table(List.of("Stage", "Attempt", "By the policy", "In fall-back rounds", "Left to Spark"), stages));

        b.append("<h4>Fall-backs</h4>");
        List<List<String>> reasons = new ArrayList<>();
        for (BridgeUiSummary.FallbackReason r : s.fallbacks()) {
            reasons.add(List.of(r.reason(), String.valueOf(r.rounds()), UIUtils.formatDate(r.firstMs()),
                    UIUtils.formatDate(r.lastMs())));
        }
        b.append(reasons.isEmpty() ? "<p>No round fell back to Spark's own scheduling.</p>"
                : table(List.of("Reason", "Rounds", "First", "Last"), reasons));

        b.append("<h4>Preemptions</h4><p>").append(s.preemptionsDone()).append(" task attempt(s) preempted, ")
                .append(s.preemptionsRefused()).append(" refused by the plugin's bounds.</p>");
        List<List<String>> recent = new ArrayList<>();
        for (BridgeEvents.Preemption p : s.preemptions()) {
            recent.add(List.of(UIUtils.formatDate(p.time()), String.valueOf(p.taskId()), p.task(),
                    p.done() ? "preempted" : "refused"));
        }
        if (!recent.isEmpty()) {
            b.append(table(List.of("Time", "Task ID", "Task (stage.index)", "Outcome"), recent));
        }

        b.append("<h4>Suspensions and resumes</h4><p>").append(s.suspends()).append(" container(s) suspended, ")
                .append(s.resumes()).append(" resumed, ").append(s.failedContainerCommands())
                .append(" command(s) not applied by their node agent.</p>");
        List<List<String>> resized = new ArrayList<>();
        for (BridgeEvents.ContainerChange c : s.containers()) {
            resized.add(List.of(UIUtils.formatDate(c.time()), c.executor(), c.container(),
                    c.suspend() ? "suspend" : "resume", c.ok() ? "applied" : "failed"));
        }
        if (!resized.isEmpty()) {
            b.append(table(List.of("Time", "Executor", "Container", "Command", "Outcome"), resized));
        }
        return b.toString();
    }

    private static String table(List<String> header, List<List<String>> rows) {
        StringBuilder b = new StringBuilder("<table class=\"table table-bordered table-sm\"><thead><tr>");
        for (String h : header) {
            b.append("<th>").append(esc(h)).append("</th>");
        }
        b.append("</tr></thead><tbody>");
        for (List<String> row : rows) {
            b.append("<tr>");
            for (String cell : row) {
                b.append("<td>").append(esc(cell)).append("</td>");
            }
            b.append("</tr>");
        }
        return b.append("</tbody></table>").toString();
    }

    private static String esc(String text) {
        return Utility.escape(text);
    }
}
