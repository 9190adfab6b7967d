package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The wait between a launching-ahead plugin's requests: longer while predictions hold, short after a miss. */
class SendPaceTest {
    @Test
    void answersWithoutWithdrawalsDoubleTheWaitUpToTheMaximum() {
        SendPace pace = new SendPace(100);
        List<Long> waits = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            waits.add(pace.waitMs());
            pace.answered(false);
        }
        assertEquals(List.of(10L, 20L, 40L, 80L, 100L, 100L), waits);
    }

    @Test
    void aWithdrawalOrAFailedCallMakesTheWaitShortAgain() {
        SendPace pace = new SendPace(100);
        pace.answered(false);
        pace.answered(false);
        pace.answered(true);
        assertEquals(SendPace.MIN_MS, pace.waitMs());
        pace.answered(false);
        assertEquals(20, pace.waitMs());
        pace.failed();
        assertEquals(SendPace.MIN_MS, pace.waitMs());
    }

    @Test
    void aMaximumBelowTheShortestWaitKeepsTheShortestWait() {
        SendPace pace = new SendPace(1);
        pace.answered(false);
        assertEquals(SendPace.MIN_MS, pace.waitMs());
    }
}
