package org.schedbridge.spark;

import java.io.IOException;

/** How the plugin reaches a policy host; {@link #connect} returns an epoch that changes on reconnect. */
interface Transport extends AutoCloseable {
    /** Connects if needed and returns the connection's epoch; fails fast when the host is down. */
    long connect() throws IOException;

    String call(String request) throws IOException;

    @Override
    void close();
}
