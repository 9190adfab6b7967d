package org.schedbridge.spark;

/**
 * Version of the JSON messages between the plugin and a policy host. Bump it on any incompatible
 * change; {@code bridge/live/spark_protocol.py} checks it and answers an error for other versions.
 */
final class Protocol {
    static final int VERSION = 2;

    private Protocol() {
    }
}
