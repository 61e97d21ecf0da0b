package rsspark.rt;

/** A chunk of rows kept until committed, and the stream position of its first row. */
record KeptChunk(long position, Chunk chunk) {
    long end() {
        return position + chunk.size();
    }
}
