package rsspark.rt;

import org.apache.spark.TaskContext;

/**
 * Where the source's chunks end, told to the sink of the same task. In real-time mode one task
 * thread reads the {@code reactive-rt} source and writes the real-time sink, row by row. A chunk is
 * the rows of one publisher batch; when our source is the one reading, the sink sends each chunk's
 * rows as one payload at its end ({@link #chunkEnded}, called before the source waits for the next)
 * instead of waking its sender for every row: one frame where there were several, each of which the
 * hub decodes, and over TLS decrypts, on its own (docs/realtime.md). With any other source the sink
 * sends as rows come.
 *
 * <p>Rows are held only while that adds little: a row that took {@link #MAX_HOLD_NANOS} or more
 * from the source to the sink (a slow transformation) leaves at once, and so does everything held
 * once its oldest row has waited that long ({@link SinkChannel}).
 *
 * <p>Per thread, and checked against the running task attempt: state a task left behind (a
 * reader closed on another thread) never changes how a later task sends.
 */
final class TaskChunks {
    /** The longest the sink holds a row for its chunk's end. */
    static final long MAX_HOLD_NANOS = 250_000;

    private static final ThreadLocal<TaskChunks> HERE = ThreadLocal.withInitial(TaskChunks::new);

    private long sourceTask = -1; // the task attempt whose reactive-rt source reads on this thread
    private long handedAt; // System.nanoTime() when the source handed Spark its latest row
    private long sinkTask = -1;
    private Runnable sinkFlush; // sends what the sink of sinkTask holds

    private TaskChunks() {
    }

    /** Our source reads on this thread for task attempt {@code task} ({@link #currentTask}). */
    static void sourceOpened(long task) {
        HERE.get().sourceTask = task;
    }

    static void sourceClosed() {
        HERE.get().sourceTask = -1;
    }

    /** The source handed Spark a row (on this thread). */
    static void rowHanded() {
        HERE.get().handedAt = System.nanoTime();
    }

    /**
     * Whether the sink of task attempt {@code task} (-1: none) may hold a row that reaches it at
     * {@code now} for its chunk's end: our source reads for that task on this thread (it calls
     * {@link #chunkEnded}), and the row took less than {@code maxHoldNanos} to come through.
     */
    static boolean mayHold(long task, long now, long maxHoldNanos) {
        TaskChunks c = HERE.get();
        return task >= 0 && c.sourceTask == task && now - c.handedAt < maxHoldNanos;
    }

    /** The sink of task attempt {@code task}: {@code flush} sends what it holds. */
    static void sinkOpened(long task, Runnable flush) {
        TaskChunks c = HERE.get();
        c.sinkTask = task;
        c.sinkFlush = flush;
    }

    static void sinkClosed(Runnable flush) {
        TaskChunks c = HERE.get();
        if (c.sinkFlush == flush) {
            c.sinkFlush = null;
            c.sinkTask = -1;
        }
    }

    /** The source used up a chunk: the sink of the same task, on this thread, sends what it holds. */
    static void chunkEnded() {
        TaskChunks c = HERE.get();
        if (c.sinkFlush != null && c.sinkTask >= 0 && c.sinkTask == c.sourceTask) c.sinkFlush.run();
    }

    /** The running task attempt's id; -1 outside a Spark task. */
    static long currentTask() {
        TaskContext tc = TaskContext.get();
        return tc == null ? -1 : tc.taskAttemptId();
    }
}
