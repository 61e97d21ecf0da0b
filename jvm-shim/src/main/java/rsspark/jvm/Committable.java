package rsspark.jvm;

/**
 * Optional, for JVM publishers read by the {@code reactive} source: told once Spark committed the
 * micro-batch ending at {@code position} (rows since the subscription began), so every row before
 * it is safe downstream. Never before that commit, once per committed micro-batch, positions
 * increasing; after a restart of the query a position already seen may come again once. The hook a
 * publisher reading a broker (AMQP, MQTT, a queue, a database change stream) needs to acknowledge
 * its upstream only once Spark has the data. A publisher implements it (the Python side's
 * {@code Committable}: {@code on_commit(position)}).
 */
public interface Committable {
    void onCommit(long position);
}
