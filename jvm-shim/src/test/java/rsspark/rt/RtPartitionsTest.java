package rsspark.rt;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import java.util.Map;

import org.apache.spark.sql.connector.read.streaming.PartitionOffset;
import org.junit.jupiter.api.Test;

/** Several endpoints as partitions of {@code reactive-rt}: the option, the offsets, merging the tasks' positions. */
class RtPartitionsTest {
    private static final String KEY = "3bdbdd88734a45a7846800c3a33260f0";

    private static RtOptions endpoints(String value) {
        return RtOptions.parse(Map.of("endpoint", value));
    }

    @Test
    void optionEndpointNamesPartitionsAsTheReactiveSourceDoes() {
        assertEquals(List.of("a", "b"), endpoints("a=tcp://127.0.0.1:1/x, b=tcp://127.0.0.1:2/y").partitions());
        assertEquals(List.of("x", "y"), endpoints("tcp://127.0.0.1:1/x,tcp://127.0.0.1:2/y").partitions());
        RtOptions o = endpoints("b=tcp://127.0.0.1:2/y?token=t2,a=tcp://127.0.0.1:1/x");
        assertEquals(List.of("b", "a"), o.partitions()); // in the given order: the tasks are planned so
        assertEquals(2, o.endpoint("b").port);
        assertEquals("t2", o.endpoint("b").token);
        assertFalse(o.describe().contains("t2"), o.describe());
    }

    @Test
    void oneEndpointIsTheSinglePartition() {
        RtOptions o = endpoints("tcp://127.0.0.1:1/x?token=t");
        assertEquals(List.of(RtOptions.SINGLE), o.partitions());
        assertEquals("x", o.endpoint(RtOptions.SINGLE).name);
    }

    @Test
    void aPartitionNamedTwiceOrBadlyIsRefusedSayingWhy() {
        IllegalArgumentException twice = assertThrows(IllegalArgumentException.class,
                () -> endpoints("tcp://127.0.0.1:1/x,tcp://127.0.0.1:2/x"));
        assertTrue(twice.getMessage().contains("names partition 'x' twice"), twice.getMessage());
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> endpoints("a b=tcp://127.0.0.1:1/x,c=tcp://127.0.0.1:2/y"));
        assertTrue(bad.getMessage().contains("address 'a b=***' has no known scheme"), bad.getMessage());
        assertTrue(bad.getMessage().contains("an id is 1-64 letters, digits"), bad.getMessage());
        IllegalArgumentException tooLong = assertThrows(IllegalArgumentException.class,
                () -> endpoints("a".repeat(65) + "=tcp://127.0.0.1:1/x,c=tcp://127.0.0.1:2/y"));
        assertTrue(tooLong.getMessage().contains("partition id '" + "a".repeat(65) + "' must be 1-64"), tooLong.getMessage());
    }

    @Test
    void theSinglePartitionOffsetKeepsTheFormatOldCheckpointsHave() {
        String old = "{\"key\":\"" + KEY + "\",\"position\":2064}";
        RtOffset o = RtOffset.parse(old);
        assertTrue(o.isSingle());
        assertEquals(2064, o.position(RtOptions.SINGLE));
        assertEquals(old, o.json());
    }

    @Test
    void severalPartitionsKeepAPositionEachSortedById() {
        RtOffset o = new RtOffset(KEY, Map.of("b", 7L, "a", 5L));
        assertEquals("{\"key\":\"" + KEY + "\",\"positions\":{\"a\":5,\"b\":7}}", o.json());
        RtOffset back = RtOffset.parse(" { \"key\" : \"" + KEY + "\" , \"positions\" : { \"b\" : 7 , \"a\" : 5 } } ");
        assertEquals(o.json(), back.json());
        assertFalse(back.isSingle());
        IllegalStateException missing = assertThrows(IllegalStateException.class, () -> back.position("c"));
        assertTrue(missing.getMessage().contains("no position for partition 'c'"), missing.getMessage());
    }

    @Test
    void malformedOffsetsAreRefused() {
        for (String bad : new String[] {"{\"key\":\"" + KEY + "\",\"positions\":{\"a\":1,\"a\":2}}",
                "{\"key\":\"" + KEY + "\",\"positions\":{\"a b\":1}}", "{\"key\":\"" + KEY + "\",\"positions\":{}}",
                "{\"key\":\"xyz\",\"position\":1}", null}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RtOffset.parse(bad));
            assertTrue(e.getMessage().contains("is not an offset of format('reactive-rt')"), e.getMessage());
        }
    }

    @Test
    void eachPartitionReadsItsOwnStreamAndOnePublisherKeepsTheQueryKey() {
        assertEquals(KEY, RtOffset.streamKey(KEY, RtOptions.SINGLE));
        String a = RtOffset.streamKey(KEY, "a");
        assertTrue(a.matches("[0-9a-f]{32}"), a);
        assertEquals(a, RtOffset.streamKey(KEY, "a")); // stable: a restarted query finds the same stream
        assertNotEquals(a, RtOffset.streamKey(KEY, "b"));
        assertNotEquals(a, RtOffset.streamKey("0".repeat(32), "a"));
    }

    @Test
    void mergingKeepsEachPartitionsFurthestPositionAndTheStartOfOneNoTaskReported() {
        RtOffset start = new RtOffset(KEY, Map.of("a", 10L, "b", 20L));
        PartitionOffset[] reported = {
            new RtOffset.Partition("a", RtOffset.streamKey(KEY, "a"), 15),
            new RtOffset.Partition("a", RtOffset.streamKey(KEY, "a"), 17), // a retried attempt went further
        };
        RtOffset end = RtStream.merge(KEY, start, List.of("a", "b"), reported);
        assertEquals(Map.of("a", 17L, "b", 20L), end.positions);
    }

    @Test
    void aTaskReportingAnotherStreamIsRefused() {
        RtOffset start = new RtOffset(KEY, Map.of("a", 0L, "b", 0L));
        PartitionOffset[] reported = {new RtOffset.Partition("a", RtOffset.streamKey(KEY, "b"), 5)};
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> RtStream.merge(KEY, start, List.of("a", "b"), reported));
        assertTrue(e.getMessage().contains("not one of this query's streams"), e.getMessage());
    }

    @Test
    void aCheckpointOfOtherPartitionsIsRefusedNamingBoth() {
        RtOffset old = RtOffset.parse("{\"key\":\"" + KEY + "\",\"position\":5}");
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> RtStream.checkPartitions(old, List.of("a", "b")));
        assertTrue(e.getMessage().contains("reads one endpoint, but option endpoint names partitions [a, b]"),
                e.getMessage());
        RtStream.checkPartitions(new RtOffset(KEY, Map.of("b", 1L, "a", 2L)), List.of("a", "b")); // order is free
    }
}
