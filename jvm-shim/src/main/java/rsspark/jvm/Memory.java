package rsspark.jvm;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;

/** One Arrow root allocator for the shim; each bridge takes a child and closes it when done. */
public final class Memory {
    private static volatile RootAllocator root;

    private Memory() {}

    static BufferAllocator child(String name) {
        return child(name, Long.MAX_VALUE);
    }

    /** A child of the shim's root allocator holding at most {@code limit} bytes (counted in {@link #allocated}). */
    public static BufferAllocator child(String name, long limit) {
        RootAllocator r = root;
        if (r == null) {
            synchronized (Memory.class) {
                r = root;
                if (r == null) root = r = new RootAllocator(Long.MAX_VALUE);
            }
        }
        return r.newChildAllocator(name + "-" + System.nanoTime(), 0, limit);
    }

    /** Bytes the shim's bridges hold right now (0 when every bridge is closed). */
    public static long allocated() {
        RootAllocator r = root;
        return r == null ? 0 : r.getAllocatedMemory();
    }
}
