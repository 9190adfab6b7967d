package org.schedbridge.spark;

import java.util.Map;
import java.util.Set;
import org.apache.spark.SparkConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a Python application needs on YARN, set by the plugin as spark-submit sets it for a
 * {@code yarn} master. spark-submit decides "Python" from the primary resource (a {@code .py}
 * file, or the PySpark shell) and then, in client mode, runs it through
 * {@code org.apache.spark.deploy.PythonRunner} (or {@code PythonGatewayServer}) as the JVM's main
 * class; for a {@code yarn} master it also sets {@code spark.yarn.isPython=true}, so YARN's client
 * ships {@code pyspark.zip} and py4j to the containers. A {@code spark-schedbridge://yarn} master
 * is not {@code yarn} to spark-submit, so the plugin reads the same decision from the JVM's main
 * thread and sets the key, unless the application set it itself.
 */
final class PythonApp {
    static final String IS_PYTHON = "spark.yarn.isPython";
    /** The main classes spark-submit runs for a Python primary resource in client deploy mode. */
    private static final Set<String> RUNNERS = Set.of("org.apache.spark.deploy.PythonRunner",
            "org.apache.spark.api.python.PythonGatewayServer");
    private static final Logger LOG = LoggerFactory.getLogger(PythonApp.class);

    private PythonApp() {
    }

    /** Sets {@code spark.yarn.isPython=true} if this JVM runs a Python application and the conf does not say. */
    static void markOnYarn(SparkConf conf) {
        mark(conf, mainStack());
    }

    /** As {@link #markOnYarn}, for a JVM whose main thread runs {@code mainStack}. */
    static void mark(SparkConf conf, StackTraceElement[] mainStack) {
        if (!conf.contains(IS_PYTHON) && runsPython(mainStack)) {
            conf.set(IS_PYTHON, "true");
            LOG.info("schedbridge: {}=true (spark-submit runs a Python application)", IS_PYTHON);
        }
    }

    /** True if one of spark-submit's Python runners is running its {@code main} on the main thread. */
    static boolean runsPython(StackTraceElement[] mainStack) {
        for (StackTraceElement frame : mainStack) {
            if (frame.getMethodName().equals("main") && RUNNERS.contains(frame.getClassName())) {
                return true;
            }
        }
        return false;
    }

    private static StackTraceElement[] mainStack() {
        for (Map.Entry<Thread, StackTraceElement[]> t : Thread.getAllStackTraces().entrySet()) {
            if (t.getKey().getName().equals("main")) {
                return t.getValue();
            }
        }
        return new StackTraceElement[0];
    }
}
