package org.schedbridge.spark;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The master URL {@code spark-schedbridge://INNER}: INNER is Spark's own master ({@code yarn},
 * {@code local[N]}, {@code local-cluster[W,C,M]}, {@code spark://h:p}) whose backend we wrap.
 * The "spark" prefix is what lets plain spark-submit accept it (it classifies it as standalone).
 */
public final class MasterUrl {
    public static final String PREFIX = "spark-schedbridge://";

    /** Which of Spark's backends the inner master selects. */
    public enum Kind { YARN, LOCAL, LOCAL_CLUSTER, STANDALONE }

    private static final Pattern LOCAL = Pattern.compile("local(?:\\[(\\d+|\\*)(?:\\s*,\\s*(\\d+))?\\])?");
    private static final Pattern LOCAL_CLUSTER =
            Pattern.compile("local-cluster\\[\\s*(\\d+)\\s*,\\s*(\\d+)\\s*,\\s*(\\d+)\\s*\\]");

    public final Kind kind;
    public final String inner;
    /** LOCAL: threads, max task failures. LOCAL_CLUSTER: workers, cores per worker, MiB per worker. */
    public final int[] numbers;

    private MasterUrl(Kind kind, String inner, int... numbers) {
        this.kind = kind;
        this.inner = inner;
        this.numbers = numbers;
    }

    public static boolean matches(String url) {
        return url != null && url.startsWith(PREFIX);
    }

    /** Parses a URL accepted by {@link #matches}; an unknown inner master is a user error. */
    public static MasterUrl parse(String url) {
        String inner = url.substring(PREFIX.length());
        if (inner.equals("yarn")) {
            return new MasterUrl(Kind.YARN, inner);
        }
        if (inner.startsWith("spark://")) {
            return new MasterUrl(Kind.STANDALONE, inner);
        }
        Matcher m = LOCAL.matcher(inner);
        if (m.matches()) {
            int threads = m.group(1) == null ? 1
                    : m.group(1).equals("*") ? Runtime.getRuntime().availableProcessors()
                    : Integer.parseInt(m.group(1));
            int failures = m.group(2) == null ? 1 : Integer.parseInt(m.group(2));
            return new MasterUrl(Kind.LOCAL, inner, threads, failures);
        }
        m = LOCAL_CLUSTER.matcher(inner);
        if (m.matches()) {
            return new MasterUrl(Kind.LOCAL_CLUSTER, inner, Integer.parseInt(m.group(1)),
                    Integer.parseInt(m.group(2)), Integer.parseInt(m.group(3)));
        }
        throw new IllegalArgumentException("schedbridge: cannot wrap master '" + inner + "' in '" + url
                + "'; expected " + PREFIX + "yarn, " + PREFIX + "local[N], " + PREFIX
                + "local-cluster[W,C,MiB] or " + PREFIX + "spark://host:port");
    }
}
