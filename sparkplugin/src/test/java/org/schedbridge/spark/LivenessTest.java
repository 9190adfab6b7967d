package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Local mode's liveness check: a round is due only when one left work and none came for the bound. */
class LivenessTest {
    @Test
    void aRoundThatLeftWorkWithNoRoundSinceIsStalledPastTheBound() {
        Liveness l = new Liveness(2000);
        l.roundEnded(1000, true);
        assertFalse(l.stalled(3000));
        assertTrue(l.stalled(3001));
    }

    @Test
    void aLaterRoundRestartsTheClockOrEndsIt() {
        Liveness l = new Liveness(2000);
        l.roundEnded(1000, true);
        l.roundEnded(2500, true);
        assertFalse(l.stalled(4000));
        assertTrue(l.stalled(4501));
        l.roundEnded(5000, false);
        assertFalse(l.stalled(60_000));
    }

    @Test
    void aRevivedStallIsTriedAgainOnlyABoundLater() {
        Liveness l = new Liveness(2000);
        l.roundEnded(0, true);
        assertTrue(l.stalled(2001));
        assertFalse(l.stalled(3000));
        assertTrue(l.stalled(4002));
    }
}
