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
 * <p>Per thread, and checked against the running task attempt: state a task left behind (a
 * reader closed on another thread) never changes how a later task sends.
 */
final class TaskChunks {
    private static final ThreadLocal<TaskChunks> HERE = ThreadLocal.withInitial(TaskChunks::new);

    private long sourceTask = -1; // the task attempt whose reactive-rt source reads on this thread
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

    /** True when our source reads on this thread for task attempt {@code task} (-1: none): it calls {@link #chunkEnded}. */
    static boolean sourceMarksEnds(long task) {
        return task >= 0 && HERE.get().sourceTask == task;
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
