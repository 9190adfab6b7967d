package org.schedbridge.spark;

import java.util.concurrent.ThreadFactory;

/** Named daemon threads for the plugin's helpers, so they never keep a driver JVM alive. */
final class DaemonThreads {
    private DaemonThreads() {
    }

    static ThreadFactory named(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }
}
