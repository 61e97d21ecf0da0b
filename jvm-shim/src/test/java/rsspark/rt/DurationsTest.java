package rsspark.rt;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

/** The duration grammar shared with Python's rs_spark.spark.durations (Durations). */
class DurationsTest {
    @Test
    void termsUnitsAndSparksWordsAddUp() {
        assertEquals(500.0, Durations.millis("x", "500ms"));
        assertEquals(30_000.0, Durations.millis("x", "30s"));
        assertEquals(5_400_000.0, Durations.millis("x", "1h 30min"));
        assertEquals(10_000.0, Durations.millis("x", "10 seconds"));
        assertEquals(7_200_000.0, Durations.millis("x", "interval 2 hours"));
        assertEquals(1.5, Durations.millis("x", "1500us"));
        assertEquals(1, Durations.wholeMillis("x", "1500us"));
        assertEquals(250.0, Durations.millis("x", " 0.25S "));
    }

    @Test
    void aBareNumberAnUnknownUnitOrGarbageIsRefusedSayingWhatToWrite() {
        IllegalArgumentException bare = assertThrows(IllegalArgumentException.class, () -> Durations.millis("pollTimeout", "5"));
        assertTrue(bare.getMessage().startsWith("option pollTimeout='5': a duration needs a unit, e.g. '5s' or '5ms'"),
                bare.getMessage());
        IllegalArgumentException unit = assertThrows(IllegalArgumentException.class, () -> Durations.millis("x", "5 fortnights"));
        assertTrue(unit.getMessage().contains("unknown unit 'fortnights'"), unit.getMessage());
        for (String bad : new String[] {"", "soon", "5s later", "-5s", "s5"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Durations.millis("x", bad), bad);
            assertTrue(e.getMessage().contains("option x='" + bad + "'"), e.getMessage());
        }
    }

    @Test
    void anOptionsMinimumIsEnforcedWithItsReason() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Durations.millis("ackTimeout", "500ms"));
        assertEquals("option ackTimeout='500ms' is below its minimum of 1s: a task's end waits for the Subscriber; "
                + "shorter fails healthy tasks", e.getMessage());
        assertEquals(1000.0, Durations.millis("ackTimeout", "1s"));
    }
}
