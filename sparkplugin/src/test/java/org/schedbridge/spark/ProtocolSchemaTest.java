package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.spark.JobArtifactSet;
import org.apache.spark.Partition;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.Success$;
import org.apache.spark.TaskState;
import org.apache.spark.scheduler.JobSucceeded$;
import org.apache.spark.scheduler.ResultTask;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerJobEnd;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.scheduler.Task;
import org.apache.spark.scheduler.TaskInfo;
import org.apache.spark.scheduler.TaskLocality;
import org.apache.spark.scheduler.TaskLocation;
import org.apache.spark.scheduler.TaskLocation$;
import org.apache.spark.scheduler.TaskSchedulerImpl;
import org.apache.spark.scheduler.TaskSet;
import org.apache.spark.scheduler.TaskSetManager;
import org.apache.spark.scheduler.WorkerOffer;
import org.apache.spark.scheduler.cluster.ExecutorInfo;
import org.apache.spark.util.SystemClock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.math.BigDecimal$;

/**
 * Every kind of message the plugin sends, built by its own code (transport, client, offer batch,
 * listener, mirror) over fake hosts, validated against {@code protocol.schema.json}: the one
 * definition of the protocol, which the Python host's tests check its messages against too, so a
 * field added or dropped on this side only fails here. The messages are also written to the file
 * named by the {@code protocol.samples} property ({@code build/protocol-samples.jsonl}), where
 * {@code tests/unit/test_protocol_schema.py} validates them with Python's validator and reads them
 * with the host's parsers ({@code make test} runs this suite first).
 */
class ProtocolSchemaTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonNode SCHEMA = BridgeConf.resource("protocol.schema.json");
    private static final Schema PLUGIN_MESSAGE = part("plugin_message");
    private static final String TOKEN = "secret-token-of-the-daemon";
    private static final String APP = "application_1_0001";
    private static final long NOW = 1_767_225_600_000L;

    private static SparkContext sc;
    /** Everything the plugin sent, in order. */
    private static final List<JsonNode> SENT = new ArrayList<>();

    /** The schema with {@code $defs/name} as its root ({@code plugin_message}: what the plugin may send). */
    private static Schema part(String name) {
        ObjectNode root = SCHEMA.deepCopy();
        root.remove("oneOf");
        root.put("$ref", "#/$defs/" + name);
        return SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12).getSchema(root);
    }

    @BeforeAll
    static void sendEveryKind() throws Exception {
        sc = new SparkContext(new SparkConf().setMaster("local[1]").setAppName("ProtocolSchemaTest")
                .set("spark.ui.enabled", "false").set("spark.driver.host", "127.0.0.1")
                .set("spark.driver.bindAddress", "127.0.0.1"));
        handshake();
        attachRoundsDetach();
        Path samples = Path.of(System.getProperty("protocol.samples", "build/protocol-samples.jsonl"));
        Files.createDirectories(samples.toAbsolutePath().getParent());
        List<String> lines = new ArrayList<>();
        for (JsonNode msg : SENT) {
            lines.add(JSON.writeValueAsString(msg));
        }
        Files.write(samples, lines, StandardCharsets.UTF_8);
    }

    @AfterAll
    static void stop() {
        sc.stop();
    }

    /** hello and auth, through {@link TcpTransport} to the fake host of {@link TcpTransportTest}. */
    private static void handshake() throws Exception {
        try (ServerSocket server = TcpTransportTest.listen()) {
            CompletableFuture<List<JsonNode>> host =
                    CompletableFuture.supplyAsync(() -> TcpTransportTest.serve(server, TOKEN));
            TcpTransport transport = new TcpTransport(TcpTransportTest.endpoint(server), TOKEN, "my-app",
                    BridgeConf.from(new SparkConf(false)), null);
            transport.connect();
            transport.close();
            SENT.addAll(host.get(10, TimeUnit.SECONDS));
        }
    }

    /**
     * attach, a snapshot round carrying the conf, a round of events and launches, detach: through
     * {@link PolicyClient} to a fake in-process host, with Spark's own listener events and task sets.
     */
    private static void attachRoundsDetach() throws Exception {
        List<String> requests = new ArrayList<>();
        InProcessChannel.set(request -> {
            requests.add(request);
            JsonNode msg = readTree(request);
            return switch (msg.path("kind").asText()) {
                case "attach" -> "{\"v\": 2, \"attached\": true, \"policy\": \"hawk\", \"launch_reports\": false}";
                case "round" -> "{\"v\": 2, \"round\": " + msg.get("round") + ", \"assign\": [], \"preempt\": [], "
                        + "\"spark_order\": false}";
                default -> "{\"v\": 2, \"detached\": true}";
            };
        });
        SparkConf conf = new SparkConf(false).set(BridgeConf.PREFIX + "endpoint", BridgeConf.INPROCESS)
                .set(BridgeConf.PREFIX + "policy", "hawk").set(BridgeConf.POLICY_PREFIX + "cutoff", "0.5");
        BridgeConf bridge = BridgeConf.from(conf);
        ClusterMirror mirror = new ClusterMirror();
        BridgeListener listener = new BridgeListener(mirror, 1024);
        TaskSetManager tsm = taskSet(3, 7);
        try (PolicyClient client = new PolicyClient(APP, PolicyEndpoint.open(bridge, APP), mirror, bridge,
                BridgeStats.reset(bridge.policy, bridge.endpoint))) {
            listener.onExecutorAdded(new SparkListenerExecutorAdded(NOW, "1", new ExecutorInfo("h1", 4,
                    scalaMap(Map.of()), scalaMap(Map.of("CONTAINER_ID", "container_1_0001_01_000002",
                            "NM_HTTP_ADDRESS", "h1:8042")))));
            listener.onJobStart(new SparkListenerJobStart(3, NOW, scalaList(List.of(stageInfo(6, List.of()),
                    stageInfo(7, List.of(6)))), jobProperties()));
            listener.onTaskStart(new SparkListenerTaskStart(7, 0, taskInfo(11)));
            assertTrue(client.round(offerRound(1, tsm, mirror, JsonNodeFactory.instance.arrayNode(), false),
                    () -> { }).answered());

            TaskInfo early = taskInfo(11);
            early.markFinished(TaskState.FINISHED(), NOW + 250);
            mirror.recordEarlyEnd(BridgeListener.taskEnd(early, 7, 0, NOW + 250, "Success"));
            TaskInfo late = taskInfo(14);
            listener.onTaskStart(new SparkListenerTaskStart(7, 0, late));
            late.markFinished(TaskState.FINISHED(), NOW + 280);
            listener.onTaskEnd(new SparkListenerTaskEnd(7, 0, "ResultTask", Success$.MODULE$, late, null, null));
            listener.onExecutorRemoved(new SparkListenerExecutorRemoved(NOW + 300, "2", "lost worker"));
            listener.onJobEnd(new SparkListenerJobEnd(3, NOW + 400, JobSucceeded$.MODULE$));
            ArrayNode launched = JsonNodeFactory.instance.arrayNode();
            PlacementRounds.launchEntry(launched, 7, 0, "1", false).add(12L).add(13L);
            PlacementRounds.launchEntry(launched, 7, 0, "1", true).add(15L);  // launched on a prediction
            assertTrue(client.round(offerRound(2, tsm, mirror, launched, true), () -> { }).answered());
            client.detach(APP);
        } finally {
            InProcessChannel.set(null);
        }
        for (String request : requests) {
            SENT.add(readTree(request));
        }
    }

    private static JsonNode readTree(String text) {
        try {
            return JSON.readTree(text);
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The request of one offer round with two executors' free cores and one runnable task set;
     * {@code ahead}: of a plugin that launches ahead.
     */
    private static ObjectNode offerRound(long round, TaskSetManager tsm, ClusterMirror mirror, ArrayNode launched,
                                         boolean ahead) {
        List<WorkerOffer> offers = List.of(offer("1", "h1", 2), offer("2", "h2", 0));
        ObjectNode request = new OfferBatch(APP, round, 1, offers, null, List.of(tsm), mirror, ahead).request;
        request.set("launched", launched);
        return request;
    }

    private static WorkerOffer offer(String executor, String host, int cores) {
        return new WorkerOffer(executor, host, BigDecimal$.MODULE$.apply(cores), Option.empty(),
                WorkerOffer.$lessinit$greater$default$5(), 0);
    }

    /** A task set of two tasks of {@code stage} (job {@code job}) preferring h1 and h2, with job properties. */
    private static TaskSetManager taskSet(int job, int stage) {
        Partition partition = () -> 0;
        Task<?>[] tasks = new Task<?>[2];
        for (int i = 0; i < tasks.length; i++) {
            List<TaskLocation> prefs = List.of(TaskLocation$.MODULE$.apply("h" + (i + 1)));
            tasks[i] = new ResultTask<>(stage, 0, null, partition, i, CollectionConverters.asScala(prefs).toList(), 0,
                    JobArtifactSet.emptyJobArtifactSet(), jobProperties(), null, Option.empty(), Option.empty(),
                    Option.empty(), false);
        }
        TaskSet set = new TaskSet(tasks, stage, 0, job, jobProperties(), 0, Option.empty(), false);
        return new TaskSetManager((TaskSchedulerImpl) sc.taskScheduler(), set, 1, Option.empty(), new SystemClock());
    }

    private static Properties jobProperties() {
        Properties props = new Properties();
        props.setProperty(BridgeListener.POOL, "etl");
        props.setProperty("schedbridge.deadline", "60s");
        props.setProperty("spark.job.description", "nightly report");
        props.setProperty("spark.rdd.scope", "not forwarded");
        return props;
    }

    private static StageInfo stageInfo(int stage, List<Object> parents) {
        return new StageInfo(stage, 0, "stage " + stage, 2, scalaList(List.of()), scalaList(parents), "", null,
                scalaList(List.of()), Option.empty(), 0, false, 0);
    }

    private static TaskInfo taskInfo(long task) {
        return new TaskInfo(task, 1, 0, 1, NOW + 10, "1", "h1", TaskLocality.PROCESS_LOCAL(), false);
    }

    private static <T> scala.collection.immutable.List<T> scalaList(List<T> list) {
        return CollectionConverters.asScala(list).toList();
    }

    private static scala.collection.immutable.Map<String, String> scalaMap(Map<String, String> map) {
        return scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(map));
    }

    @Test
    void everyMessageThePluginSendsIsAPluginMessageOfTheSchema() {
        for (JsonNode msg : SENT) {
            assertEquals(List.of(), PLUGIN_MESSAGE.validate(msg), msg.toString());
        }
    }

    @Test
    void everyKindAndEveryEventKindWasSent() {
        Set<String> kinds = new TreeSet<>();
        Set<String> events = new TreeSet<>();
        for (JsonNode msg : SENT) {
            kinds.add(msg.get("kind").asText());
            msg.path("events").forEach(e -> events.add(e.get("e").asText()));
            msg.path("snapshot").forEach(list -> list.forEach(e -> events.add(e.get("e").asText())));
        }
        assertEquals(Set.of("hello", "auth", "attach", "round", "detach"), kinds);
        assertEquals(Set.of("executor_added", "executor_removed", "task_start", "task_end", "job_start", "job_end"),
                events);
        JsonNode snapshotRound = SENT.get(3);
        assertTrue(snapshotRound.has("snapshot") && snapshotRound.has("conf"), snapshotRound.toString());
        JsonNode eventRound = SENT.get(4);
        assertFalse(eventRound.path("launched").isEmpty() || eventRound.path("stages").isEmpty()
                || eventRound.path("slots").isEmpty(), eventRound.toString());
    }

    @Test
    void theVersionAndTheSizeBoundAreTheSchemas() {
        assertEquals(Protocol.VERSION, SCHEMA.at("/$defs/version/const").asInt());
        assertEquals(Protocol.MAX_MESSAGE, SCHEMA.get("x-max-message-bytes").asInt());
    }

    @Test
    void aFieldAddedOrDroppedOnOneSideFails() {
        ObjectNode added = SENT.get(4).deepCopy();
        added.put("priority", 1);
        assertFalse(PLUGIN_MESSAGE.validate(added).isEmpty());
        ObjectNode nested = SENT.get(4).deepCopy();
        ((ObjectNode) nested.get("stages").get(0)).put("priority", 1);
        assertFalse(PLUGIN_MESSAGE.validate(nested).isEmpty());
        ObjectNode dropped = SENT.get(4).deepCopy();
        dropped.remove("launched");
        assertFalse(PLUGIN_MESSAGE.validate(dropped).isEmpty());
        ObjectNode otherVersion = SENT.get(2).deepCopy();
        otherVersion.put("v", Protocol.VERSION + 1);
        assertFalse(PLUGIN_MESSAGE.validate(otherVersion).isEmpty());
    }
}
