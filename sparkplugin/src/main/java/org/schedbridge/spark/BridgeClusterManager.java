package org.schedbridge.spark;

import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.deploy.LocalSparkCluster;
import org.apache.spark.scheduler.ExternalClusterManager;
import org.apache.spark.scheduler.SchedulerBackend;
import org.apache.spark.scheduler.TaskScheduler;
import org.apache.spark.scheduler.TaskSchedulerImpl;
import org.apache.spark.scheduler.cluster.StandaloneSchedulerBackend;
import org.apache.spark.scheduler.cluster.YarnClientSchedulerBackend;
import org.apache.spark.scheduler.cluster.YarnClusterSchedulerBackend;
import org.apache.spark.scheduler.local.LocalSchedulerBackend;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.runtime.BoxedUnit;

/**
 * Selected by {@code spark-schedbridge://INNER} masters (found through META-INF/services): builds a
 * policy-driven task scheduler over Spark's own backend for INNER, so executors still come from
 * YARN containers, standalone workers or the local JVM.
 */
public final class BridgeClusterManager implements ExternalClusterManager {
    private static final Logger LOG = LoggerFactory.getLogger(BridgeClusterManager.class);
    private static final String LOCALITY_WAIT = "spark.locality.wait";

    @Override
    public boolean canCreate(String masterURL) {
        return MasterUrl.matches(masterURL);
    }

    @Override
    public TaskScheduler createTaskScheduler(SparkContext sc, String masterURL) {
        SparkVersion.check(sc.version());
        MasterUrl url = MasterUrl.parse(masterURL);
        PlacementRounds rounds = newRounds(sc);
        return switch (url.kind) {
            case YARN -> clusterMode(sc) ? new BridgeYarnClusterScheduler(sc, rounds) : yarnClient(sc, rounds);
            case LOCAL -> new BridgeTaskScheduler(sc, url.numbers[1], true, rounds);
            case LOCAL_CLUSTER, STANDALONE -> new BridgeTaskScheduler(sc, sc.conf().getInt("spark.task.maxFailures", 4),
                    false, rounds);
        };
    }

    /**
     * The driver runs here and YARN's client, started with the backend, ships the containers' files:
     * for a Python application, pyspark.zip and py4j ({@link PythonApp}).
     */
    private static BridgeYarnScheduler yarnClient(SparkContext sc, PlacementRounds rounds) {
        PythonApp.markOnYarn(sc.conf());
        return new BridgeYarnScheduler(sc, rounds);
    }

    /** The driver runs in YARN's ApplicationMaster (started there by {@link ClusterDriver}). */
    private static boolean clusterMode(SparkContext sc) {
        return "cluster".equals(sc.deployMode());
    }

    /**
     * The policy's side of the scheduler, checked before any task can run: the endpoint is opened
     * (a local host started) and the host must accept the application's policy and parameters, or
     * SparkContext creation fails with the reason (unless {@code spark.schedbridge.fallback=true}).
     */
    private static PlacementRounds newRounds(SparkContext sc) {
        BridgeConf conf = BridgeConf.from(sc.conf());
        grantsLaunchAtOnce(sc.conf());
        PolicyEndpoint endpoint = PolicyEndpoint.open(conf, sc.appName());
        BridgeStats stats = BridgeStats.reset(conf.policy, endpoint.description);
        BridgeUiTab.attach(sc);
        stats.journal(sc.listenerBus()::post);
        ClusterMirror mirror = new ClusterMirror();
        PolicyClient client = new PolicyClient(sc.appName(), endpoint, mirror, conf, stats);
        try {
            client.start();
        } catch (RuntimeException e) {
            client.close();
            throw e;
        }
        sc.listenerBus().post(new BridgeEvents.PolicyStart(System.currentTimeMillis(), conf.policy, conf.params,
                endpoint.description));
        sc.addSparkListener(new BridgeListener(mirror, sc.getConf().getSizeAsMb("spark.executor.memory", "1g")));
        return new PlacementRounds(sc, conf, client, mirror, stats);
    }

    /**
     * A grant names the executor the policy chose, and Spark launches it through its own
     * {@code resourceOffers}, whose delay scheduling would leave that slot idle for up to
     * {@code spark.locality.wait} (3 s) per locality level, waiting for an executor the policy did
     * not choose. Policies see each stage's preferred hosts and decide; so, unless the application
     * sets {@code spark.locality.wait} itself, it is 0s (set before any task set exists; logged,
     * and shown in the application's environment).
     */
    private static void grantsLaunchAtOnce(SparkConf conf) {
        if (!conf.contains(LOCALITY_WAIT)) {
            conf.set(LOCALITY_WAIT, "0s");
            LOG.info("schedbridge: {}=0s (the policy places tasks; set it to keep Spark's delay scheduling)",
                    LOCALITY_WAIT);
        }
    }

    @Override
    public SchedulerBackend createSchedulerBackend(SparkContext sc, String masterURL, TaskScheduler scheduler) {
        MasterUrl url = MasterUrl.parse(masterURL);
        TaskSchedulerImpl ts = (TaskSchedulerImpl) scheduler;
        return switch (url.kind) {
            case YARN -> clusterMode(sc) ? new YarnClusterSchedulerBackend(ts, sc) : new YarnClientSchedulerBackend(ts, sc);
            case LOCAL -> new LocalSchedulerBackend(sc.conf(), ts, url.numbers[0]);
            case STANDALONE -> standalone(ts, sc, url.inner);
            case LOCAL_CLUSTER -> localCluster(ts, sc, url.numbers);
        };
    }

    private static StandaloneSchedulerBackend standalone(TaskSchedulerImpl ts, SparkContext sc, String inner) {
        String[] masters = inner.substring("spark://".length()).split(",");
        for (int i = 0; i < masters.length; i++) {
            masters[i] = "spark://" + masters[i];
        }
        return new StandaloneSchedulerBackend(ts, sc, masters);
    }

    /** As SparkContext does for local-cluster[W,C,M]: start in-JVM master and workers, stop them with the backend. */
    private static StandaloneSchedulerBackend localCluster(TaskSchedulerImpl ts, SparkContext sc, int[] n) {
        LocalSparkCluster cluster = new LocalSparkCluster(n[0], n[1], n[2], sc.conf());
        StandaloneSchedulerBackend backend = new StandaloneSchedulerBackend(ts, sc, cluster.start());
        backend.shutdownCallback_$eq(b -> {
            cluster.stop();
            return BoxedUnit.UNIT;
        });
        return backend;
    }

    @Override
    public void initialize(TaskScheduler scheduler, SchedulerBackend backend) {
        ((TaskSchedulerImpl) scheduler).initialize(backend);
    }
}
