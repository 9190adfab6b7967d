package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The watchdog fires only for a hold that no round in between has ended. */
class HoldWatchTest {
    @Test
    void aHoldLongerThanTheBoundMakesOneRoundSparks() {
        HoldWatch watch = new HoldWatch(300);
        watch.held(1_000);
        watch.held(1_200);  // still held: the clock keeps its start
        assertFalse(watch.expired(1_300));
        assertTrue(watch.expired(1_301));
        assertFalse(watch.expired(5_000), "one round, then the clock starts again");
    }

    @Test
    void aRoundThatLeftNoSlotIdleEndsTheHold() {
        HoldWatch watch = new HoldWatch(300);
        watch.held(1_000);
        watch.ended();  // e.g. launches ahead filled every free slot, with no placing round in between
        assertFalse(watch.expired(40_000), "a later round does not count the time since the old hold");
        watch.held(40_000);
        assertFalse(watch.expired(40_300));
        assertTrue(watch.expired(40_301));
    }
}
