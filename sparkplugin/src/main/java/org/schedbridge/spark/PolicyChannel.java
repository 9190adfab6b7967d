package org.schedbridge.spark;

/**
 * The one call between the plugin and a policy host: a versioned JSON request in, a JSON reply
 * out. Implemented in Python (py4j callback, in-process) and by {@link TcpTransport} (daemon).
 * Only strings cross it, never JVM objects.
 */
public interface PolicyChannel {
    String call(String request);
}
