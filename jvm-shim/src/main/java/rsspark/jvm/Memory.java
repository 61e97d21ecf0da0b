package rsspark.jvm;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;

/** One Arrow root allocator for the shim; each bridge takes a child and closes it when done. */
public final class Memory {
    private static volatile RootAllocator root;

    private Memory() {}

    static BufferAllocator child(String name) {
        RootAllocator r = root;
        if (r == null) {
            synchronized (Memory.class) {
                r = root;
                if (r == null) root = r = new RootAllocator(Long.MAX_VALUE);
            }
        }
        return r.newChildAllocator(name + "-" + System.nanoTime(), 0, Long.MAX_VALUE);
    }

    /** Bytes the shim's bridges hold right now (0 when every bridge is closed). */
    public static long allocated() {
        RootAllocator r = root;
        return r == null ? 0 : r.getAllocatedMemory();
    }
}
