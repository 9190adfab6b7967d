package org.schedbridge.spark;

/**
 * The containers a policy's node side resized, by outcome: suspended, resumed, or a command the
 * node agent did not apply. One count for the scheduler's counters ({@link BridgeStats}) and the
 * UI's summary ({@link BridgeUiListener}); its owner synchronises.
 */
final class ContainerCounts {
    private long suspends;
    private long resumes;
    private long failed;

    /** One resize: a failed command counts as failed whichever way it went. */
    void count(boolean suspend, boolean ok) {
        if (!ok) {
            failed++;
        } else if (suspend) {
            suspends++;
        } else {
            resumes++;
        }
    }

    long suspends() {
        return suspends;
    }

    long resumes() {
        return resumes;
    }

    long failed() {
        return failed;
    }
}
