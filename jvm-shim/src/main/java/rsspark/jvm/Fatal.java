package rsspark.jvm;

/**
 * Errors no catch may swallow: a broken JVM or a broken class path, as Reactor's
 * {@code Exceptions.throwIfJvmFatal} and the Python side's {@code throw_if_fatal}.
 */
public final class Fatal {
    private Fatal() {}

    /** Rethrows {@code t} if it is fatal to the JVM (out of memory, stack overflow, linkage). */
    public static void throwIfFatal(Throwable t) {
        if (t instanceof VirtualMachineError vme) {
            throw vme;
        }
        if (t instanceof LinkageError le) {
            throw le;
        }
    }
}
