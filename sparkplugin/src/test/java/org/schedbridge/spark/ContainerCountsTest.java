package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The containers a node side resized, by outcome. */
class ContainerCountsTest {
    @Test
    void aFailedCommandCountsAsFailedWhicheverWayItWent() {
        ContainerCounts counts = new ContainerCounts();
        counts.count(true, true);
        counts.count(true, true);
        counts.count(false, true);
        counts.count(true, false);
        counts.count(false, false);
        assertEquals(List.of(2L, 1L, 2L), List.of(counts.suspends(), counts.resumes(), counts.failed()));
    }
}
