package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;

class PythonAppTest {
    private static StackTraceElement frame(String cls, String method) {
        return new StackTraceElement(cls, method, null, -1);
    }

    /** The main thread of `spark-submit app.py` in client mode, and of a PySpark shell's gateway. */
    @Test
    void sparkSubmitsPythonRunnersOnTheMainThreadMeanAPythonApplication() {
        assertTrue(PythonApp.runsPython(new StackTraceElement[] {
            frame("java.lang.ProcessImpl", "waitFor"), frame("org.apache.spark.deploy.PythonRunner$", "main"),
            frame("org.apache.spark.deploy.PythonRunner", "main"), frame("org.apache.spark.deploy.SparkSubmit", "main")}));
        assertTrue(PythonApp.runsPython(new StackTraceElement[] {
            frame("org.apache.spark.api.python.PythonGatewayServer", "main")}));
    }

    @Test
    void aJvmApplicationOrAnEmptyStackIsNotPython() {
        assertFalse(PythonApp.runsPython(new StackTraceElement[] {
            frame("SumApp", "main"), frame("org.apache.spark.deploy.SparkSubmit", "main")}));
        assertFalse(PythonApp.runsPython(new StackTraceElement[0]));
        assertFalse(PythonApp.runsPython(new StackTraceElement[] {frame("org.apache.spark.deploy.PythonRunner", "other")}));
    }

    @Test
    void aPythonApplicationIsMarkedUnlessItsConfSaysItselfAJvmOneIsNot() {
        StackTraceElement[] python = {frame("org.apache.spark.deploy.PythonRunner", "main")};
        SparkConf none = new SparkConf(false);
        PythonApp.mark(none, python);
        assertEquals("true", none.get(PythonApp.IS_PYTHON));
        SparkConf own = new SparkConf(false).set(PythonApp.IS_PYTHON, "false");
        PythonApp.mark(own, python);
        assertEquals("false", own.get(PythonApp.IS_PYTHON));
        SparkConf jvm = new SparkConf(false);
        PythonApp.mark(jvm, new StackTraceElement[] {frame("SumApp", "main")});
        assertFalse(jvm.contains(PythonApp.IS_PYTHON));
    }

    /** This JVM (JUnit's) runs no Python application. */
    @Test
    void thisJvmIsNotMarked() {
        SparkConf none = new SparkConf(false);
        PythonApp.markOnYarn(none);
        assertFalse(none.contains(PythonApp.IS_PYTHON));
    }
}
