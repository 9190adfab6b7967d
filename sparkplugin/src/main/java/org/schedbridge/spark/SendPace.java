package org.schedbridge.spark;

/**
 * How long a plugin launching ahead lets its news (task ends, launches to confirm) gather before
 * they go to the policy: they need no answer before Spark launches, so the fewer requests the less
 * the host and the driver spend per task, but a miss is found (and its launch withdrawn) only when
 * the policy hears of it. So the wait starts short, doubles with each answer that withdrew nothing
 * (the policy's predictions hold), up to {@code launch.ahead.max.wait}, and is short again after a
 * withdrawal or a failed call.
 */
final class SendPace {
    /** The shortest wait between two requests, and the first. */
    static final long MIN_MS = 10;

    private final long maxMs;
    private long waitMs = MIN_MS;

    SendPace(long maxMs) {
        this.maxMs = Math.max(MIN_MS, maxMs);
    }

    /** The wait between two requests now. */
    long waitMs() {
        return waitMs;
    }

    /** An answer landed; {@code withdrew}: it had launches ahead withdrawn (the policy placed otherwise). */
    void answered(boolean withdrew) {
        waitMs = withdrew ? MIN_MS : Math.min(2 * waitMs, maxMs);
    }

    /** A call failed: the next round asks before launching again, and soon. */
    void failed() {
        waitMs = MIN_MS;
    }
}
