package rsspark.rt;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

/**
 * The checkpointed offset of reactive-rt (RtOffset): its JSON, as Spark writes it to the offset log,
 * and the refusal of any other shape. Kept apart from the other tests: the offset's shape changes
 * when it carries several partitions (a checkpoint of this shape must keep working then).
 */
class RtOffsetTest {
    static final String KEY = "0123456789abcdef0123456789abcdef";

    @Test
    void theJsonRoundTripsAndIsStableText() {
        RtOffset o = new RtOffset(KEY, 42);
        assertEquals("{\"key\":\"" + KEY + "\",\"position\":42}", o.json());
        RtOffset back = RtOffset.parse(o.json());
        assertEquals(KEY, back.key);
        assertEquals(42, back.position);
        assertEquals(o.json(), back.json());
        assertEquals(o, back, "Spark compares offsets by their JSON");
    }

    @Test
    void anOffsetWrittenByThisReleaseParses() {
        // The form in checkpoints of this release (offsets/N, the source's entry), spaces as Jackson may add them.
        RtOffset o = RtOffset.parse(" { \"key\" : \"" + KEY + "\" , \"position\" : 123456789012 } ");
        assertEquals(123456789012L, o.position);
        assertEquals(0, RtOffset.parse("{\"key\":\"" + KEY + "\",\"position\":0}").position);
    }

    @Test
    void otherShapesAreRefusedSayingWhatAnOffsetLooksLike() {
        String[] bad = {
            null,
            "",
            "42",
            "{\"key\":\"" + KEY + "\"}",
            "{\"position\":1}",
            "{\"key\":\"" + KEY.toUpperCase() + "\",\"position\":1}",
            "{\"key\":\"abc\",\"position\":1}",
            "{\"key\":\"" + KEY + "\",\"position\":-1}",
            "{\"key\":\"" + KEY + "\",\"position\":1.5}",
            "{\"key\":\"" + KEY + "\",\"position\":1234567890123456789}",
            "{\"key\":\"" + KEY + "\",\"position\":1,\"extra\":2}",
            "{\"position\":1,\"key\":\"" + KEY + "\"}",
            "{\"offset\":17}",
            "{\"key\":\"" + KEY + "\",\"positions\":{}}",
            "{\"key\":\"" + KEY + "\",\"positions\":{\"a\":-1}}",
            "{\"key\":\"" + KEY + "\",\"positions\":{\"a\":1.5}}",
            "{\"key\":\"" + KEY + "\",\"position\":1,\"positions\":{\"a\":1}}",
        };
        for (String json : bad) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RtOffset.parse(json), json);
            assertTrue(e.getMessage().contains("is not an offset of format('reactive-rt') "
                    + "({\"key\":\"<32 hex digits>\",\"position\":N} or {\"key\":...,\"positions\":{\"id\":N,...}})"),
                    e.getMessage());
            assertTrue(e.getMessage().contains("was this checkpoint written by another source?"), e.getMessage());
        }
    }

    @Test
    void aPartitionOffsetCarriesTheKeyAndThePositionAfterTheLastRowHandedToSpark() {
        RtOffset.Partition p = new RtOffset.Partition(RtOptions.SINGLE, KEY, 7);
        assertEquals(KEY, p.key());
        assertEquals(7, p.position());
    }

    @Test
    void aPartitionOffsetIsARecordThatSurvivesJavaSerializationAsSparkSendsItFromAnExecutor() throws Exception {
        RtOffset.Partition p = new RtOffset.Partition("eu", RtOffset.streamKey(KEY, "eu"), 42);
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        try (java.io.ObjectOutputStream out = new java.io.ObjectOutputStream(bytes)) {
            out.writeObject(p);
        }
        try (java.io.ObjectInputStream in = new java.io.ObjectInputStream(
                new java.io.ByteArrayInputStream(bytes.toByteArray()))) {
            assertEquals(p, in.readObject());
        }
    }
}
