package rsspark.spark;

import java.util.Locale;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.streaming.WriteToStream;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.streaming.OutputMode;

import scala.Function1;
import scala.runtime.BoxedUnit;

/**
 * rs_spark's Spark session extension ({@code spark.sql.extensions=rsspark.spark.ReactiveExtensions}, with the
 * shim jar on {@code spark.jars}; {@code rs_spark.spark.local_session} sets both): a check rule that refuses
 * {@code writeStream.format("reactive").outputMode("update")} as {@code start()} analyses the query, with
 * {@link #advice()} saying what works instead.
 *
 * <p>Without it Spark refuses that query later and in its own words: {@code StreamExecution.createWrite}, run
 * in the query's thread as it plans the first micro-batch (after {@code start()} returned), requires the sink's
 * {@code WriteBuilder} to be a {@code SupportsStreamingUpdateAsAppend}, which Spark's {@code PythonWriteBuilder}
 * (every Python data source sink) is not, and fails the query with {@code requirement failed: reactive does not
 * support Update mode}. No code of rs_spark runs in between, and the Python data source is never told the output
 * mode. An analyzer check rule is the one place a library can see a streaming write's output mode and sink
 * before that: {@code start()} analyses the {@code WriteToStream} plan (output mode, sink table) synchronously
 * and throws what a check rule throws.
 */
public final class ReactiveExtensions implements Function1<SparkSessionExtensions, BoxedUnit> {
    /** What Spark's {@code PythonTable} is named: the class of every Python data source's table. */
    static final String PYTHON_TABLE = "org.apache.spark.sql.execution.datasources.v2.python.PythonTable";

    /** What to use instead; the same text as {@code rs_spark.spark.sink.mode_refusal.ADVICE} (a test compares). */
    static final String ADVICE =
            "writeStream.format('reactive') cannot write output mode update: Spark refuses it for every Python data"
                    + " source sink. Use rs_spark.write_stream(df, subscriber, output_mode='update') (a Subscriber in"
                    + " this process, or the address of one served with rs_spark.serve_sink), or, for a served"
                    + " Subscriber, df.writeStream.foreachBatch(rs_spark.spark.sink.each_batch.deliver_each_batch("
                    + "ep.address)).outputMode('update'): both deliver each micro-batch through the same hub and"
                    + " ledger, exactly once; or use output mode append or complete with format('reactive')";

    /** {@link #ADVICE}, for py4j (which reads methods, not fields). */
    public static String advice() {
        return ADVICE;
    }

    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        extensions.injectCheckRule(ReactiveExtensions::updateModeCheck);
        return BoxedUnit.UNIT;
    }

    private static Function1<LogicalPlan, BoxedUnit> updateModeCheck(SparkSession session) {
        return plan -> {
            try {
                check(plan);
            } catch (LinkageError e) {
                // A Spark whose classes differ from the ones the shim was compiled against: leave the
                // refusal to Spark rather than fail the analysis of every plan.
            }
            return BoxedUnit.UNIT;
        };
    }

    /** Throws {@code IllegalArgumentException} naming the query and what to use when {@code plan} writes
     * {@code format("reactive")} in update mode; anything else passes. */
    static void check(LogicalPlan plan) {
        if (!(plan instanceof WriteToStream write) || !OutputMode.Update().equals(write.outputMode())) return;
        if (!isReactive(write.sink())) return;
        String query = write.name() == null || write.name().isEmpty() ? "this query" : "query '" + write.name() + "'";
        throw new IllegalArgumentException(
                "rs_spark refused to start " + query + " (checkpoint " + write.resolvedCheckpointLocation()
                        + "), which writes format('" + write.sink().name() + "') in output mode update. " + ADVICE
                        + ". Spark itself would start it and fail it at its first micro-batch with 'requirement"
                        + " failed: " + write.sink().name() + " does not support Update mode'");
    }

    /** A Python data source's table named {@code reactive} (the name is the format as the user typed it). */
    private static boolean isReactive(Table sink) {
        return sink != null
                && PYTHON_TABLE.equals(sink.getClass().getName())
                && "reactive".equals(String.valueOf(sink.name()).toLowerCase(Locale.ROOT));
    }
}
