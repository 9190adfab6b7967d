package org.schedbridge.spark;

import java.io.IOException;

/**
 * The policy hosted by the PySpark driver of this JVM, registered through py4j before the
 * SparkContext starts. Each registration is a new epoch, so a re-registered host gets full state.
 */
public final class InProcessChannel implements Transport {
    private static volatile PolicyChannel current;
    private static volatile long epoch;

    /** Called from Python with a py4j proxy implementing {@link PolicyChannel}; null unregisters. */
    public static synchronized void set(PolicyChannel channel) {
        current = channel;
        epoch++;
    }

    @Override
    public long connect() throws IOException {
        if (current == null) {
            throw new IOException("no in-process policy registered (start the session through "
                    + "bridge.plugin.inprocess, or set spark.schedbridge.endpoint=tcp://host:port)");
        }
        return epoch;
    }

    @Override
    public String call(String request) throws IOException {
        PolicyChannel ch = current;
        if (ch == null) {
            throw new IOException("in-process policy unregistered");
        }
        return ch.call(request);
    }

    @Override
    public void close() {
        // the Python side owns the callback server
    }
}
