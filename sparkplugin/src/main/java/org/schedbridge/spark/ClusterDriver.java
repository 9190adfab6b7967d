package org.schedbridge.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.SparkConf;

/**
 * The ApplicationMaster's user class in YARN cluster deploy mode ({@code schedbridge submit
 * --deploy-mode cluster}, or {@code spark-submit --master yarn --deploy-mode cluster --class
 * org.schedbridge.spark.ClusterDriver}). The ApplicationMaster sets {@code spark.master=yarn} just
 * before it starts its user class, so the application's SparkContext would get Spark's own YARN
 * scheduler; this class sets {@code spark-schedbridge://yarn} instead, then runs the application
 * unchanged: a Python file through Spark's {@code PythonRunner}, or a JVM main class, named by
 * {@code spark.schedbridge.cluster.pyFile} or {@code .mainClass} in the conf the ApplicationMaster
 * turned into system properties.
 */
public final class ClusterDriver {
    private static final String PY_FILES = "spark.submit.pyFiles";

    private ClusterDriver() {
    }

    public static void main(String[] args) throws Exception {
        Plan plan = plan(new SparkConf(), args);
        System.setProperty("spark.master", MasterUrl.PREFIX + "yarn");
        Class.forName(plan.mainClass()).getMethod("main", String[].class).invoke(null, (Object) plan.args());
    }

    /** What to run: a main class and its arguments. */
    record Plan(String mainClass, String[] args) {
    }

    /** The application's entry point from the conf; neither or both named is an error. */
    static Plan plan(SparkConf sparkConf, String[] args) {
        BridgeConf conf = BridgeConf.from(sparkConf);
        if (conf.clusterPyFile.isEmpty() == conf.clusterMainClass.isEmpty()) {
            throw new IllegalArgumentException("schedbridge: cluster deploy mode needs exactly one of "
                    + BridgeConf.PREFIX + "cluster.pyFile and " + BridgeConf.PREFIX + "cluster.mainClass "
                    + "(schedbridge submit sets them)");
        }
        if (conf.clusterMainClass.isEmpty()) {
            List<String> runner = new ArrayList<>(List.of(conf.clusterPyFile, sparkConf.get(PY_FILES, "")));
            runner.addAll(Arrays.asList(args));
            return new Plan("org.apache.spark.deploy.PythonRunner", runner.toArray(String[]::new));
        }
        return new Plan(conf.clusterMainClass, args);
    }
}
