package org.schedbridge.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;

/**
 * The ApplicationMaster's user class in YARN cluster deploy mode ({@code schedbridge submit
 * --deploy-mode cluster}, or {@code spark-submit --master yarn --deploy-mode cluster --class
 * org.schedbridge.spark.ClusterDriver}). The ApplicationMaster sets {@code spark.master=yarn} just
 * before it starts its user class, so the application's SparkContext would get Spark's own YARN
 * scheduler; this class sets {@code spark-schedbridge://yarn} instead, then runs the application
 * unchanged: a Python file through Spark's {@code PythonRunner}, or a JVM main class. The
 * application comes from the conf the ApplicationMaster turned into system properties.
 */
public final class ClusterDriver {
    /** The application's Python file, shipped to the container's directory ({@code --files}). */
    static final String PY_FILE = "spark.schedbridge.cluster.pyFile";
    /** Or the application's JVM main class (its jar is the ApplicationMaster's primary resource). */
    static final String MAIN_CLASS = "spark.schedbridge.cluster.mainClass";
    private static final String PY_FILES = "spark.submit.pyFiles";

    private ClusterDriver() {
    }

    public static void main(String[] args) throws Exception {
        Plan plan = plan(System.getProperties(), args);
        System.setProperty("spark.master", MasterUrl.PREFIX + "yarn");
        Class.forName(plan.mainClass()).getMethod("main", String[].class).invoke(null, (Object) plan.args());
    }

    /** What to run: a main class and its arguments. */
    record Plan(String mainClass, String[] args) {
    }

    /** The application's entry point from the ApplicationMaster's properties; neither or both set is an error. */
    static Plan plan(Properties props, String[] args) {
        String py = props.getProperty(PY_FILE, "");
        String main = props.getProperty(MAIN_CLASS, "");
        if (py.isEmpty() == main.isEmpty()) {
            throw new IllegalArgumentException("schedbridge: cluster deploy mode needs exactly one of " + PY_FILE
                    + " and " + MAIN_CLASS + " (schedbridge submit sets them)");
        }
        if (main.isEmpty()) {
            List<String> runner = new ArrayList<>(List.of(py, props.getProperty(PY_FILES, "")));
            runner.addAll(Arrays.asList(args));
            return new Plan("org.apache.spark.deploy.PythonRunner", runner.toArray(String[]::new));
        }
        return new Plan(main, args);
    }
}
