package rsspark.rt;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import rsspark.rsocket.ChannelWriter;
import rsspark.rsocket.Connection;
import rsspark.rsocket.Endpoint;
import rsspark.rsocket.Frames;

/** {@link ChannelWriter} against a scripted hub: what the writer makes of the hub's answers. */
class ChannelWriterTest {

    @Test
    void aHubThatCancelsAndAnswersWhileRowsStillWaitMeansNoMoreCreditNotAMisuse() throws Exception {
        try (ScriptedHub hub = new ScriptedHub()) {
            ChannelWriter w = ChannelWriter.open(Endpoint.parse(hub.address(), null), new Connection.Options(), 1);
            try {
                hub.await(f -> !ScriptedHub.ofType(f, Frames.REQUEST_CHANNEL).isEmpty(), "REQUEST_CHANNEL");
                hub.send(Frames.requestN(1, 2));
                assertEquals(2, w.awaitCredit(TimeUnit.SECONDS.toNanos(30)));
                // The hub's "duplicate": it delivered this epoch before, so it cancels and answers at once.
                hub.send(Frames.cancel(1));
                byte[] head = Frames.payloadHeader(1, true, true);
                byte[] answer = "duplicate".getBytes(StandardCharsets.UTF_8);
                byte[] frame = new byte[head.length + answer.length];
                System.arraycopy(head, 0, frame, 0, head.length);
                System.arraycopy(answer, 0, frame, head.length, answer.length);
                hub.send(frame);
                List<byte[]> got = w.awaitAnswers(TimeUnit.SECONDS.toNanos(30));
                assertEquals("duplicate", new String(got.get(0), StandardCharsets.UTF_8));
                // A sender with rows still queued asks once more: no more credit (-1), not an IllegalStateException.
                assertEquals(-1, w.awaitCredit(TimeUnit.MILLISECONDS.toNanos(1)));
            } finally {
                w.close();
            }
        }
    }
}
