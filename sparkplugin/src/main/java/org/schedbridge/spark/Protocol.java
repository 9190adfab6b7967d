package org.schedbridge.spark;

/**
 * Version of the JSON messages between the plugin and a policy host. Bump it on any incompatible
 * change; {@code bridge/protocol/messages.py} checks it and answers an error for other versions.
 * The messages, this version and the size bound are defined by {@code protocol.schema.json} (a
 * resource of this package), which {@code ProtocolSchemaTest} checks these constants against.
 */
final class Protocol {
    static final int VERSION = 2;
    /**
     * Largest message either side sends or reads (one JSON line, in characters here, bytes in
     * Python: JSON is ASCII-escaped). Over it the connection is closed, never split; the same bound
     * is {@code MAX_MESSAGE_BYTES} in {@code bridge/protocol/messages.py}.
     */
    static final int MAX_MESSAGE = 16 << 20;

    private Protocol() {
    }
}
