package org.schedbridge.spark;

/**
 * The watchdog's clock: since when free slots have stayed held back while tasks waited. Any round
 * that leaves no free slot with a task waiting for it ends the hold, whether the policy answered
 * it (a placing round) or launches ahead filled the slots; only a hold that lasts longer than
 * {@code maxMs} through every round in between makes the next round Spark's.
 */
final class HoldWatch {
    private final long maxMs;
    /** Since when every round has held free slots back while tasks waited; -1 if the last did not. */
    private long sinceMs = -1;

    HoldWatch(long maxMs) {
        this.maxMs = maxMs;
    }

    long maxMs() {
        return maxMs;
    }

    /** A round left free slots and waiting tasks: the hold starts, or goes on. */
    void held(long nowMs) {
        if (sinceMs < 0) {
            sinceMs = nowMs;
        }
    }

    /** A round left no free slot with a task waiting for it. */
    void ended() {
        sinceMs = -1;
    }

    /** True if the hold has lasted longer than the bound: this round is Spark's, and the clock restarts. */
    boolean expired(long nowMs) {
        if (sinceMs >= 0 && nowMs - sinceMs > maxMs) {
            sinceMs = -1;
            return true;
        }
        return false;
    }
}
