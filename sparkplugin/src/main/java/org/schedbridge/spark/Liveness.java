package org.schedbridge.spark;

/**
 * Local mode's backend offers a round only when a task ends or something asks it to (a revive):
 * a round that leaves a free slot with a task waiting for it must schedule the next one itself
 * (a held-back revive, a late call's check, an answer's re-offer). The liveness check's clock:
 * since when the last round left such work, so that a round that scheduled nothing (a fault in the
 * plugin) costs {@code boundMs}, counted, instead of the application.
 */
final class Liveness {
    private final long boundMs;
    /** When the last round left a free slot and a waiting task; -1 if it did not. */
    private long sinceMs = -1;

    Liveness(long boundMs) {
        this.boundMs = boundMs;
    }

    long boundMs() {
        return boundMs;
    }

    /** A round ended; {@code leftWork}: it left a free slot and a task waiting for one. */
    synchronized void roundEnded(long nowMs, boolean leftWork) {
        sinceMs = leftWork ? nowMs : -1;
    }

    /**
     * True if no round has come for longer than the bound since one left work: a round is due (the
     * clock restarts, so a revive that brings none is tried again a bound later).
     */
    synchronized boolean stalled(long nowMs) {
        if (sinceMs >= 0 && nowMs - sinceMs > boundMs) {
            sinceMs = nowMs;
            return true;
        }
        return false;
    }
}
