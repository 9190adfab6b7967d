package org.schedbridge.spark;

import java.util.List;

/**
 * The Spark release lines the plugin is built and tested against. It extends Spark's scheduler
 * internals ({@code TaskSchedulerImpl}, the YARN client backend), which change between minor
 * releases, so any other version is refused when the scheduler is created, with one error naming
 * the supported lines, rather than failing later inside a scheduler call.
 */
final class SparkVersion {
    /** Supported release lines (major.minor): every patch release of each. */
    static final List<String> SUPPORTED = List.of("4.3");

    private SparkVersion() {
    }

    /** Throws {@link IllegalStateException} unless {@code version} is of a supported line. */
    static void check(String version) {
        if (!SUPPORTED.contains(releaseLine(version))) {
            throw new IllegalStateException("schedbridge: Spark " + version + " is not supported; the plugin works with Spark "
                    + String.join(", ", SUPPORTED.stream().map(line -> line + ".x").toList())
                    + " (use a supported Spark, or a master without spark-schedbridge:// for Spark's own scheduling)");
        }
    }

    /** {@code 4.3} for {@code 4.3.0}, {@code 4.3.1-SNAPSHOT} or {@code 4.3}; the whole text if it has no minor. */
    static String releaseLine(String version) {
        String[] parts = version.split("[.-]", 3);
        return parts.length >= 2 ? parts[0] + "." + parts[1] : version;
    }
}
